// surge's step on one GPU. Compiled at start-up by NVRTC with the case's options and
// constants as -D defines (see crates/surge-cuda/src/compile.rs for the full list); each
// kernel is the twin of a stage of crates/surge-cpu.
//
// Buffers (n particles held, sorted by key after each rebuild; a device holds copies of
// its neighbours' edge layers before and after the particles it owns):
//   pos  float4[n]  offset from the cell centre (xyz), the cell (w: the bits of its linear
//                   index on the whole grid, CELL_REMOVED for a particle the sort drops;
//                   cell_coords, cell_word). Every particle's mass is the case's, MASS.
//   vel  float4[n]  velocity (xyz), relative density rho/rho0 - 1 (w)
//   info Info[n]    global id, kind (0 fluid, 1 boundary, 2 buffer of an open boundary): a
//                   uint2, or with INFO_PACKED one word, the kind in its top two bits (cases
//                   without open boundaries whose ids lie below 2^30: compile.rs, info_packed)
//   vel_prev, pos_prev, force, wall, shift, mdbc float4[n]: as in surge_core::buffers
//   cell_start: the cell table of the window, cells + 2 uint starts (cell k's particles in
//     [start[k], start[k+1]), its fluid bin first) then cells uchar fluid counts (the first
//     fluid[k] of cell k's particles are fluid or buffer particles): CellTable, cell_table()
//
// The grid: NX, NY, NZ count the cells of the whole grid and periodic axes wrap over them.
// The device holds the layers [wlo, whi) of the split axis O0 (its window, a kernel
// argument since the load balancer moves it): cell k's linear index counts layers from wlo,
// and a neighbour cell outside the window is skipped. Alone, a device's window is the
// whole axis.
//   stats uint[8]: 0 max |a| (float bits), 1 max visc term, 2 max displacement, 3 max speed,
//                  4 lowest id of a particle that failed (0xffffffff: none), 5 of slot 6's
//                  particles, those removed for their density (domain.density_range),
//                  6 fluid particles a rebuild's rekey removed (they left the domain or
//                  their density range),
//                  7 the most fluid particles in one cell (over 255: the table cannot say)
#include "physics/vec.cuh"
#include "physics/kernel.cuh"
#include "physics/eos.cuh"
#include "physics/pair.cuh"
#include "physics/mdbc.cuh"

#ifndef INFO_PACKED
#define INFO_PACKED 0
#endif
#if INFO_PACKED
typedef unsigned Info;
__device__ __forceinline__ unsigned info_id(Info a) { return a & 0x3fffffffu; }
__device__ __forceinline__ unsigned info_kind(Info a) { return a >> 30; }
__device__ __forceinline__ Info make_info(unsigned id, unsigned kind) { return id | (kind << 30); }
#else
typedef uint2 Info;
__device__ __forceinline__ unsigned info_id(Info a) { return a.x; }
__device__ __forceinline__ unsigned info_kind(Info a) { return a.y; }
__device__ __forceinline__ Info make_info(unsigned id, unsigned kind) { return make_uint2(id, kind); }
#endif

#define STAT_ACC 0
#define STAT_VISC 1
#define STAT_DISP 2
#define STAT_VEL 3
#define STAT_BAD_ID 4
#define STAT_DENSITY_OUT 5
#define STAT_REMOVED 6
#define STAT_CELL_FLUID 7

// Linear index of a cell in the window from layer wlo: unsigned, as a window may hold more
// than 2^31 cells.
__device__ __forceinline__ unsigned cell_linear(int cx, int cy, int cz, int wlo) {
    const int c[3] = {cx, cy, cz};
    const unsigned n[3] = {NX, NY, NZ};
    return ((unsigned)(c[O0] - wlo) * n[O1] + (unsigned)c[O1]) * n[O2] + (unsigned)c[O2];
}

// A particle's cell is kept in its pos.w: the bits of the cell's linear index on the whole
// grid (cell_linear from layer 0; compile.rs refuses grids of 2^32 - 1 cells or more), or
// CELL_REMOVED for a particle that left the domain or flowed out, which the next sort drops.
// The host's twins: backend.rs, cell_word and cell_of_word.
#define CELL_REMOVED 0xffffffffu

__device__ __forceinline__ float cell_word(int cx, int cy, int cz) {
    return __uint_as_float(cell_linear(cx, cy, cz, 0));
}

__device__ __forceinline__ float removed_word() { return __uint_as_float(CELL_REMOVED); }

// The cell coordinates of a pos.w (w = 1 for a removed particle, else 0).
__device__ __forceinline__ int4 cell_coords(float word) {
    const unsigned g = __float_as_uint(word);
    if (g == CELL_REMOVED) return make_int4(0, 0, 0, 1);
    const unsigned n[3] = {NX, NY, NZ};
    int c[3];
    const unsigned t = g / n[O2];
    c[O2] = (int)(g - t * n[O2]);
    c[O0] = (int)(t / n[O1]);
    c[O1] = (int)(t - (unsigned)c[O0] * n[O1]);
    return make_int4(c[0], c[1], c[2], 0);
}

// The cell table of the window [wlo, whi) (LAYER_CELLS cells a layer): a cell's fluid (and
// buffer) particles first, then its boundary particles, each by id. TABLE_BINS 2 (where
// twice the whole grid's cells fit in 32-bit keys): two bins a cell, the fluid's and the
// boundary's, 8 bytes a cell. TABLE_BINS 1 (larger grids: two billion particles on two GPUs
// put 3 billion cells in one window): one bin a cell and a byte of fluid count after the
// cells + 2 starts, 5 bytes a cell, at 1.3 % more time a step (the force kernel reads the
// count apart and spills more: docs/PERFORMANCE.md). The order is the same: results are
// bitwise equal.
#if TABLE_BINS == 2
struct CellTable {
    const unsigned *__restrict__ start;
    __device__ __forceinline__ unsigned begin(unsigned k) const { return start[2u * k]; }
    __device__ __forceinline__ unsigned mid(unsigned k) const { return start[2u * k + 1u]; }
    __device__ __forceinline__ unsigned end(unsigned k) const { return start[2u * k + 2u]; }
};

__device__ __forceinline__ CellTable cell_table(const unsigned *cell_start, int, int) { return {cell_start}; }
#else
struct CellTable {
    const unsigned *__restrict__ start;
    const unsigned char *__restrict__ fluid;  // after the cells + 2 starts
    __device__ __forceinline__ unsigned begin(unsigned k) const { return start[k]; }
    __device__ __forceinline__ unsigned mid(unsigned k) const { return start[k] + fluid[k]; }
    __device__ __forceinline__ unsigned end(unsigned k) const { return start[k + 1]; }
};

__device__ __forceinline__ CellTable cell_table(const unsigned *cell_start, int wlo, int whi) {
    const size_t cells = (size_t)(whi - wlo) * (size_t)LAYER_CELLS;
    return {cell_start, reinterpret_cast<const unsigned char *>(cell_start + cells + 2)};
}
#endif

// False when `axis` is the split axis and layer k lies outside the window [wlo, whi)
// (folds to true on the other axes: O0 is a define).
__device__ __forceinline__ bool in_window(int axis, int k, int wlo, int whi) {
    return axis != O0 || (k >= wlo && k < whi);
}

// Neighbour cell coordinate along one axis, wrapped on periodic axes; false outside.
__device__ __forceinline__ bool neighbour_axis(int c, int d, int n, bool periodic, int &out) {
    int k = c + d;
    if (k < 0 || k >= n) {
        if (!periodic) return false;
        k = (k % n + n) % n;
    }
    out = k;
    return true;
}

__device__ __forceinline__ float pressure_of(float d) { return tait_pressure(d, TAIT_B, GAMMA, PB); }

// Max-reduce two non-negative floats over the block, then one atomic per block.
__device__ void block_max2(float a, float b, unsigned *stats, int ia, int ib) {
    __shared__ float sa[32], sb[32];
    for (int o = 16; o > 0; o >>= 1) {
        a = fmaxf(a, __shfl_down_sync(0xffffffffu, a, o));
        b = fmaxf(b, __shfl_down_sync(0xffffffffu, b, o));
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        sa[warp] = a;
        sb[warp] = b;
    }
    __syncthreads();
    if (warp == 0) {
        int nw = (blockDim.x + 31) >> 5;
        a = lane < nw ? sa[lane] : 0.0f;
        b = lane < nw ? sb[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) {
            a = fmaxf(a, __shfl_down_sync(0xffffffffu, a, o));
            b = fmaxf(b, __shfl_down_sync(0xffffffffu, b, o));
        }
        if (lane == 0) {
            atomicMax(&stats[ia], __float_as_uint(a));
            atomicMax(&stats[ib], __float_as_uint(b));
        }
    }
}

// ---- rebuild -----------------------------------------------------------------------

// Move the particles first..first+count to the cells that hold them (wrapping periodic
// axes, on the whole grid); a particle outside the domain or not finite keeps its cell. With
// `remove`, a fluid particle whose position is finite but outside the domain, or whose
// relative density lies outside [dlo, dhi] (domain.density_range), is marked (pos.w =
// CELL_REMOVED: the classification and the sort drop it) and counted; any other records its
// id (the rebuild fails). grid.rekey and surge-cpu's sort::rekey are the twins.
extern "C" __global__ void rekey_kernel(int first, int count, int remove, float dlo, float dhi, float4 *pos,
                                        const float4 *vel, const Info *info, unsigned *stats) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    int i = first + t;
    const float4 p = pos[i];
    const int4 c = cell_coords(p.w);
    // Marked by open_rebuild_kernel: it flowed out, the sort drops it.
    if (c.w != 0) return;
    int cc[3] = {c.x, c.y, c.z};
    float off[3] = {p.x, p.y, p.z};
    const float cs[3] = {CSX, CSY, CSZ};
    const int nn[3] = {NX, NY, NZ};
    const bool per[3] = {PERX, PERY, PERZ};
    for (int a = 0; a < DIM; ++a) {
        // roundf, like Rust's f32::round (halves away from zero): grid.rekey is the twin.
        float k = roundf(off[a] / cs[a]);
        bool ok = isfinite(k);
        long long ca = 0;
        if (ok) {
            ca = (long long)cc[a] + (long long)k;
            off[a] = off[a] - k * cs[a];
            if (per[a]) {
                ca = ((ca % nn[a]) + nn[a]) % nn[a];
            } else if (ca < 0 || ca >= nn[a]) {
                ok = false;
            }
        }
        if (!ok) {
            const bool finite = isfinite(p.x) && isfinite(p.y) && isfinite(p.z);
            if (remove && finite && info_kind(info[i]) == 0u) {
                pos[i].w = removed_word();
                atomicAdd(&stats[STAT_REMOVED], 1u);
            } else {
                atomicMin(&stats[STAT_BAD_ID], info_id(info[i]));
            }
            return;
        }
        cc[a] = (int)ca;
    }
    // Case::density_out, for fluid particles only (no velocity load for the others); vel.w
    // of a fluid particle is its own relative density (MDBC_IN_VEL puts mDBC values in wall
    // particles' entries only).
    const Info info_i = info[i];
    if (info_kind(info_i) == 0u) {
        const float d = vel[i].w;
        if (d < dlo || d > dhi) {
            if (remove) {
                pos[i].w = removed_word();
                atomicAdd(&stats[STAT_REMOVED], 1u);
                atomicAdd(&stats[STAT_DENSITY_OUT], 1u);
            } else {
                atomicMin(&stats[STAT_BAD_ID], info_id(info_i));
            }
            return;
        }
    }
    pos[i] = make_float4(off[0], off[1], off[2], cell_word(cc[0], cc[1], cc[2]));
}

// Sort key of held particle i from its stored cell: its linear index in the window
// (TABLE_BINS 1: order_bins_kernel puts the fluid first within it), or twice that plus one
// for a boundary particle (TABLE_BINS 2). After a rebuild's classification the first `held`
// particles are the ones held before it: of those, the copies (outside own_lo..own_hi), the
// owned particles outside the new window and those removed (CELL_REMOVED, set by
// rekey_kernel) are dropped: key `bins`, a bin past the cells, so the sort moves them behind
// the rest and lets them go (no compaction pass). Any other particle whose split-axis layer
// lies outside the window [wlo, whi) is `bad` (key 0, never used: the rebuild fails). No
// buffer keeps the keys: the histogram and the scatter compute them.
struct SortWindow {
    int wlo, whi, held, own_lo, own_hi;
    unsigned bins;
};

__device__ __forceinline__ unsigned particle_key(const SortWindow &w, int i, const float4 *pos, const Info *info,
                                                 bool &bad) {
    const int4 c = cell_coords(pos[i].w);
    bad = false;
    if (i < w.held && (i < w.own_lo || i >= w.own_hi || c.w != 0)) return w.bins;
    const int cc[3] = {c.x, c.y, c.z};
    if (cc[O0] < w.wlo || cc[O0] >= w.whi) {
        if (i < w.held) return w.bins;
        bad = true;
        return 0u;
    }
#if TABLE_BINS == 2
    // Buffer particles (kind 2) share the fluid's bin (surge_core::buffers::Kind::bin).
    return 2u * cell_linear(c.x, c.y, c.z, w.wlo) + (info_kind(info[i]) == 1u ? 1u : 0u);
#else
    return cell_linear(c.x, c.y, c.z, w.wlo);
#endif
}

// The particle sort's counts (perm null: histogram_kernel with particle_key), recording the
// lowest id of a particle outside the window, or its placement (scatter_kernel).
extern "C" __global__ void key_sort_kernel(int n, int wlo, int whi, int held, int own_lo, int own_hi, unsigned bins,
                                           const float4 *pos, const Info *info, unsigned *table, unsigned *perm,
                                           unsigned *stats) {
    const SortWindow w = {wlo, whi, held, own_lo, own_hi, bins};
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    bool bad;
    const unsigned k = particle_key(w, i, pos, info, bad);
    if (perm) {
        perm[atomicAdd(&table[k + 1u], 1u)] = (unsigned)i;
    } else {
        if (bad) atomicMin(&stats[STAT_BAD_ID], info_id(info[i]));
        atomicAdd(&table[k + 1u], 1u);
    }
}

// First half of a rebuild: of the owned particles first..first+count, count those whose
// split-axis layer is outside the new window [lo, hi) or that were removed (CELL_REMOVED,
// set by rekey_kernel) (they leave; counters[0]; a removed one goes nowhere), list those
// in the left neighbour's window [llo, lhi) at the front of send[] and those in the right
// neighbour's window [rlo, rhi) at its back (the two windows never overlap: slices are at
// least 2 halo thick), counting them in counters[1] and counters[2]. The order is
// arbitrary: the receiver sorts by cell, kind and id.
extern "C" __global__ void classify_kernel(int first, int count, int lo, int hi, int llo, int lhi, int rlo,
                                           int rhi, const float4 *pos, unsigned *send, unsigned *counters) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    const unsigned i = (unsigned)(first + t);
    const int4 c = cell_coords(pos[i].w);
    const int cc[3] = {c.x, c.y, c.z};
    const int l = cc[O0];
    if (c.w != 0) {
        atomicAdd(&counters[0], 1u);
        return;
    }
    if (l < lo || l >= hi) atomicAdd(&counters[0], 1u);
    if (l >= llo && l < lhi) send[atomicAdd(&counters[1], 1u)] = i;
    if (l >= rlo && l < rhi) send[(unsigned)count - 1u - atomicAdd(&counters[2], 1u)] = i;
}

// The cell table (bins + 2 values) is built in place: counts at key + 1, an exclusive scan
// (table[k + 1] = start of bin k), then the scatter advances table[key + 1] as its cursor,
// which leaves table[k] = start of bin k for every k, and table[bins] = the particles kept
// (the dropped ones, key bins, follow up to table[bins + 1] = n).
// Count the keys of a counting sort (at key + 1: the scan makes the counts bin starts). A key
// equal to `skip` is not counted, nor placed by scatter_kernel: the mDBC list's entries past
// its end (a million such keys' atomics on one word took 0.5 ms at dp 0.01).
extern "C" __global__ void histogram_kernel(int n, const unsigned *key, unsigned skip, unsigned *table) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && key[i] != skip) atomicAdd(&table[key[i] + 1u], 1u);
}

// Exclusive scan of len values in blocks of SCAN_BLOCK values, SCAN_THREADS threads a block
// with four consecutive values each (one 16-byte load and store where all four lie within
// len). The host (backend.rs, scan_table) first takes each block's total of the table
// (scan_sum_kernel), scans the totals level by level (scan_block_kernel, then
// scan_add_kernel back down), and at last scans the table's blocks in place, each from its
// offset (scan_block_kernel with offsets): the table is read twice and written once.
// Lengths and indices are unsigned: a table of a billion particles' cells passes 2^31 values.
#define SCAN_BLOCK 1024
#define SCAN_THREADS 256

// The four values of this thread (0 past len). The arrays are 16-byte aligned (whole
// allocations), and a block starts at a multiple of SCAN_BLOCK.
__device__ __forceinline__ void scan_load4(unsigned len, const unsigned *in, unsigned base, unsigned v[4]) {
    if (base + 3u < len) {
        const uint4 q = *reinterpret_cast<const uint4 *>(in + base);
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
        for (unsigned k = 0; k < 4u; ++k) v[k] = base + k < len ? in[base + k] : 0u;
    }
}

// The exclusive prefix of x over the block's threads (in thread order); total gets the
// block's sum. Once a kernel: its shared words are reused by no other call.
__device__ __forceinline__ unsigned scan_block_exclusive(unsigned x, unsigned &total) {
    __shared__ unsigned warp_sums[SCAN_THREADS / 32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    unsigned inc = x;
    for (unsigned o = 1; o < 32u; o <<= 1) {
        const unsigned y = __shfl_up_sync(0xffffffffu, inc, o);
        if (lane >= o) inc += y;
    }
    if (lane == 31u) warp_sums[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        unsigned w = lane < SCAN_THREADS / 32 ? warp_sums[lane] : 0u;
        for (unsigned o = 1; o < 32u; o <<= 1) {
            const unsigned y = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) w += y;
        }
        if (lane < SCAN_THREADS / 32) warp_sums[lane] = w;
    }
    __syncthreads();
    total = warp_sums[SCAN_THREADS / 32 - 1];
    return (warp > 0 ? warp_sums[warp - 1] : 0u) + inc - x;
}

// block_sums[b] = the total of block b's values.
extern "C" __global__ void __launch_bounds__(SCAN_THREADS) scan_sum_kernel(unsigned len, const unsigned *in,
                                                                           unsigned *block_sums) {
    unsigned v[4];
    scan_load4(len, in, blockIdx.x * SCAN_BLOCK + 4u * threadIdx.x, v);
    unsigned total;
    scan_block_exclusive(v[0] + v[1] + v[2] + v[3], total);
    if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
}

// out gets the exclusive prefix of each value within its block, plus offsets[b] (if
// offsets is not null); block_sums[b] (if not null) the block's total. `in` and `out` may be
// the same array: each thread reads its values before it writes them, and no other thread
// reads them.
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_block_kernel(unsigned len, const unsigned *in, unsigned *out, unsigned *block_sums,
                      const unsigned *offsets) {
    const unsigned base = blockIdx.x * SCAN_BLOCK + 4u * threadIdx.x;
    unsigned v[4];
    scan_load4(len, in, base, v);
    unsigned total;
    const unsigned e = scan_block_exclusive(v[0] + v[1] + v[2] + v[3], total) + (offsets ? offsets[blockIdx.x] : 0u);
    const unsigned o[4] = {e, e + v[0], e + v[0] + v[1], e + v[0] + v[1] + v[2]};
    if (base + 3u < len) {
        *reinterpret_cast<uint4 *>(out + base) = make_uint4(o[0], o[1], o[2], o[3]);
    } else {
        for (unsigned k = 0; k < 4u; ++k)
            if (base + k < len) out[base + k] = o[k];
    }
    if (block_sums && threadIdx.x == 0) block_sums[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS) scan_add_kernel(unsigned len, unsigned *out,
                                                                           const unsigned *block_offsets) {
    const unsigned base = blockIdx.x * SCAN_BLOCK + 4u * threadIdx.x, add = block_offsets[blockIdx.x];
    for (unsigned k = 0; k < 4u; ++k)
        if (base + k < len) out[base + k] += add;
}

// Place each particle in its bin (order within a bin fixed by order_bins_kernel), but those
// whose key is `skip` (histogram_kernel).
extern "C" __global__ void scatter_kernel(int n, const unsigned *key, unsigned skip, unsigned *table, unsigned *perm) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && key[i] != skip) perm[atomicAdd(&table[key[i] + 1u], 1u)] = (unsigned)i;
}

// Sort each bin's particles by their kind's bin (fluid and buffer particles first, then
// boundary: surge_core::buffers::Kind::bin; with TABLE_BINS 2 a bin holds one of the two)
// and global id (insertion sort; bins hold tens of particles), so the order, and with it
// every sum, is the same from run to run; with TABLE_BINS 1 count a cell's fluid into the
// table's byte (cell_table), or record a count past 255.
__device__ __forceinline__ unsigned long long bin_order(const Info *info, unsigned v) {
    const Info in = info[v];
    return ((unsigned long long)(info_kind(in) == 1u ? 1u : 0u) << 32) | info_id(in);
}

extern "C" __global__ void order_bins_kernel(unsigned bins, const unsigned *cell_start, unsigned *perm,
                                             const Info *info, unsigned char *fluid, unsigned *stats) {
    unsigned b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= bins) return;
    unsigned s = cell_start[b], e = cell_start[b + 1];
    for (unsigned k = s + 1; k < e; ++k) {
        unsigned v = perm[k];
        const unsigned long long o = bin_order(info, v);
        unsigned j = k;
        while (j > s && bin_order(info, perm[j - 1]) > o) {
            perm[j] = perm[j - 1];
            --j;
        }
        perm[j] = v;
    }
#if TABLE_BINS == 1
    unsigned f = 0;
    while (s + f < e && info_kind(info[perm[s + f]]) != 1u) ++f;
    fluid[b] = (unsigned char)min(f, 255u);
    if (f > 255u) atomicMax(&stats[STAT_CELL_FLUID], f);
#endif
}

extern "C" __global__ void gather16_kernel(int n, const unsigned *perm, const uint4 *src, uint4 *dst) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[perm[i]];
}

extern "C" __global__ void gather4_kernel(int n, const unsigned *perm, const unsigned *src, unsigned *dst) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[perm[i]];
}

extern "C" __global__ void gather8_kernel(int n, const unsigned *perm, const uint2 *src, uint2 *dst) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[perm[i]];
}

// ---- forces ------------------------------------------------------------------------

// One thread per particle i: sum over the fluid and boundary particles of the cells within R
// of i's cell ((2R+1)^DIM cells). FORCES_MIN_BLOCKS resident blocks per multiprocessor, chosen
// by crates/surge-cuda/src/compile.rs (forces_min_blocks: 6, 5 with the wall function).
#ifndef FORCES_MIN_BLOCKS
#error "FORCES_MIN_BLOCKS: defined by compile.rs (forces_min_blocks)"
#endif

// The neighbour traversal ([gpu] traversal; docs/PERFORMANCE.md, "Neighbour traversals"):
//   0 cells: the stencil's cells one by one, in stencil order (z, y, x) then storage order,
//     as the CPU sums;
//   1 ranges: the cells of a stencil row along the key's fastest axis RA are consecutive in
//     storage, so each row is one range of particles walked in one loop (25 ranges for 125
//     cells); a lane moves to the row's next cell when its index passes the cell's end. The
//     lanes of a warp no longer wait, cell by cell, for the lane with the fullest cell, only
//     row by row. The rows go in the order of the other two axes of the key (O0, then O1),
//     each row in storage order: another summation order than the CPU's (parity within its
//     tolerance), the same on every device, worker and run. A row does not wrap: compile.rs
//     (Traversal::resolve) keeps 0 where RA is periodic.
//   2 pencil: the rows of 1 in the same order, each block's rows read once into shared
//     memory (the pencil kernel below); the ghost-node passes walk as 1.
//   3 cta: a block per cell of the whole support (R = 1), its rows staged in shared memory
//     (the cta kernel below); the ghost-node passes walk as 1.
#ifndef TRAVERSAL
#define TRAVERSAL 0
#endif
#define RA (DIM == 3 ? O2 : O1)
#if TRAVERSAL >= 1 && ((RA == 0 && PERX) || (RA == 1 && PERY) || (RA == 2 && PERZ))
#error "TRAVERSAL 1 (ranges), 2 (pencil) or 3 (cta) along a periodic axis: rows do not wrap"
#endif

#if TRAVERSAL >= 1
// x, through an empty asm the compiler cannot see into: a row's offsets (stencil_rows) stay
// in registers through the row's candidates, where the compiler would otherwise recompute them
// from the row's integer offsets at each candidate (four instructions of the 21 a candidate
// outside the support took; docs/PERFORMANCE.md, "The pair body in fewer instructions").
__device__ __forceinline__ float opaque(float x) {
    float y;
    asm("mov.b32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

#ifndef ROW_TRIM
#define ROW_TRIM 0
#endif
// Calls row(k, kend, b) for each row of the stencil of cell c (point at offset p from its
// centre): the row's cells are k..kend (linear indices, consecutive along RA, clipped to the
// grid), b the point's offset from the centre of cell k. The rows go in the order of O0,
// then O1 (3D); a neighbour outside the grid or the window is skipped, as in the cells loop.
//
// TRIM (a lane's own walk, no barriers in `row`; ROW_TRIM on): only the rows and the cells of
// a row that can hold a particle within the support of the point. A candidate lies at most
// ROW_EXT_* from its cell's centre along each axis (half the cell, half the skin: a particle
// moves less than that between rebuilds; and 1e-3 of the support for rounding), so a row
// whose two outer axes are alone that far away is skipped, and of the others only the cells
// along RA within the rest of the support are walked. What is left out lies outside the
// support and added nothing (force_candidate's r2 < SUPPORT2), and the walk keeps its order
// and b[RA] steps as the whole row's would: the sums are bitwise those of the whole rows.
// A 5-wide stencil then walks about two thirds of its cells a lane; but the lanes of a warp,
// spread over a few cells of a row, trim differently, and a model of uniform cells gives the
// warp's trips only 7 % fewer (issue 16: 2 % off the step of Test 2's whole run with DBC;
// docs/PERFORMANCE.md, "Rows trimmed to the support").
template <bool TRIM, typename Row>
__device__ __forceinline__ void stencil_rows(const int c[3], const float p[3], int wlo, int whi, Row &&row) {
    const int n[3] = {NX, NY, NZ};
    const bool per[3] = {PERX, PERY, PERZ};
    const float cs[3] = {CSX, CSY, CSZ};
#if ROW_TRIM
    const float ext[3] = {ROW_EXT_X, ROW_EXT_Y, ROW_EXT_Z};
#endif
    const int lo = max(-R, -c[RA]), hi = min(R, n[RA] - 1 - c[RA]);
    if (hi < lo) return;  // a cell more than R cells outside the grid: no row reaches into it
    // The outer axes: O0 and O1 in 3D, O0 in 2D (z has one cell there).
    const int ua = O0, wa = DIM == 3 ? O1 : O2, wr = DIM == 3 ? R : 0;
    for (int du = -R; du <= R; ++du) {
        int cu;
        if (!neighbour_axis(c[ua], du, n[ua], per[ua], cu) || !in_window(ua, cu, wlo, whi)) continue;
        for (int dw = -wr; dw <= wr; ++dw) {
            int cw;
            if (!neighbour_axis(c[wa], dw, n[wa], per[wa], cw) || !in_window(wa, cw, wlo, whi)) continue;
            int cc[3];
            float b[3];
            cc[ua] = cu, cc[wa] = cw, cc[RA] = c[RA] + lo;
            b[ua] = opaque(p[ua] - (float)du * cs[ua]);
            b[wa] = opaque(p[wa] - (float)dw * cs[wa]);
            b[RA] = p[RA] - (float)lo * cs[RA];
            const unsigned k = cell_linear(cc[0], cc[1], cc[2], wlo);
            int from = lo, to = hi;
#if ROW_TRIM
            if (TRIM) {
                const float eu = fmaxf(fabsf(b[ua]) - ext[ua], 0.0f);
                const float ew = DIM == 3 ? fmaxf(fabsf(b[wa]) - ext[wa], 0.0f) : 0.0f;
                const float w2 = SUPPORT2 - eu * eu - ew * ew;
                if (w2 <= 0.0f) continue;
                const float w = sqrtf(w2) + ext[RA];
                from = max(lo, (int)ceilf((p[RA] - w) / cs[RA]));
                to = min(hi, (int)floorf((p[RA] + w) / cs[RA]));
                if (to < from) continue;
                // As the whole row's walk would step to cell `from` (RowWalk::run).
                for (int s = lo; s < from; ++s) b[RA] -= cs[RA];
            }
#endif
            row(k + (unsigned)(from - lo), k + (unsigned)(to - lo), b);
        }
    }
}

// The walk of one stencil row: visit(j, mid, b) for the particles of the cells k..kend in
// storage order, all of them or (fluid_only) the fluid bins only; mid is the end of j's
// cell's fluid, b the offset from the centre of j's cell (b[RA] steps by one cell). One
// loop for the row: a lane moves to the next cell when j passes its cell's end. `run`
// pauses before `limit` (the shared-memory traversals' tiles) and resumes where it stopped.
struct RowWalk {
    unsigned k, kend, j, mid, e;
    bool done;
    __device__ __forceinline__ void start(const CellTable &t, unsigned k0, unsigned k1, bool fluid_only, bool on) {
        k = k0, kend = k1, done = !on;
        j = t.begin(k), mid = t.mid(k);
        e = fluid_only ? mid : t.end(k);
    }
    template <typename Visit>
    __device__ __forceinline__ void run(const CellTable &t, bool fluid_only, float b[3], unsigned limit,
                                        Visit &&visit) {
        const float step = RA == 0 ? CSX : RA == 1 ? CSY : CSZ;
        while (!done) {
            if (j >= e) {
                if (k == kend) {
                    done = true;
                    break;
                }
                ++k;
                b[RA] -= step;
                // With every bin, the next cell starts where this one ended.
                if (fluid_only) j = t.begin(k);
                mid = t.mid(k);
                e = fluid_only ? mid : t.end(k);
                continue;
            }
            if (j >= limit) break;
            visit(j, mid, b);
            ++j;
        }
    }
};

// The whole row k..kend at once (TRAVERSAL 1 and the ghost-node passes).
template <typename Visit>
__device__ __forceinline__ void row_particles(const CellTable &t, unsigned k, unsigned kend, bool fluid_only,
                                              float b[3], Visit &&visit) {
    RowWalk w;
    w.start(t, k, kend, fluid_only, true);
    w.run(t, fluid_only, b, 0xffffffffu, visit);
}
#endif

// The force kernel's parameters (one kernel a traversal: the pencil and cta kernels below,
// the cells and ranges one last): the particles first..first+count only (a part of the
// owned range: the edges or the inner particles); neighbours are any held particle in the
// window [wlo, whi).
#define FORCES_PARAMS                                                                                             \
    int first, int count, int wlo, int whi, const float4 *__restrict__ pos, const float4 *__restrict__ vel,       \
        const Info *__restrict__ info, const float4 *__restrict__ wall, const float4 *__restrict__ mdbc,          \
        const unsigned *__restrict__ cell_start, float4 *__restrict__ force, float4 *__restrict__ shift,         \
        unsigned *stats, const unsigned char *__restrict__ fluid_counts

// The cell table the force kernel reads: with one bin a cell the fluid counts come as an
// argument (TABLE_BINS 1), with two they are not read.
__device__ __forceinline__ CellTable force_table(const unsigned *__restrict__ cell_start,
                                                 const unsigned char *__restrict__ fluid_counts, int wlo, int whi) {
#if TABLE_BINS == 1
    (void)wlo, (void)whi;
    return {cell_start, fluid_counts};
#else
    (void)fluid_counts;
    return cell_table(cell_start, wlo, whi);
#endif
}

// One candidate j of particle i's sum (b: i's offset from the centre of j's cell), at pj4
// (its offset from its cell's centre and its cell, read by the caller).
__device__ __forceinline__ void force_candidate_at(float4 pj4, unsigned j, unsigned mid, float bx, float by, float bz,
                                                   bool fluid, const PairParticle &pi, const float4 *__restrict__ vel,
                                                   const float4 *__restrict__ wall, const float4 *__restrict__ mdbc,
                                                   Accum &acc) {
    const float3 r = v3(bx - pj4.x, by - pj4.y, bz - pj4.z);
    const float r2 = norm2(r);
    // i itself (r2 = 0) adds exact zeros (every term carries r or r2), so it is not tested for.
    if (r2 < SUPPORT2) {
        const float4 vj4 = vel[j];
#if MDBC_IN_VEL
        // A wall particle's velocity buffer holds its mDBC values (mdbc_kernel); its own
        // velocity is zero (compile.rs, mdbc_in_vel).
        const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        PairParticle pj = {j < mid ? xyz(vj4) : xyz(zero), RHO0 * (1.0f + vj4.w), pressure_of(vj4.w), MASS};
#else
        PairParticle pj = {xyz(vj4), RHO0 * (1.0f + vj4.w), pressure_of(vj4.w), MASS};
#endif
        if (fluid) {
#if !MDBC_IN_VEL
            const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#endif
#if (VISC == 2 && !MDBC) || WALL_FN
            const float4 wj = j < mid ? zero : wall[j];
#else
            const float4 wj = zero;
#endif
#if MDBC_IN_VEL
            const float4 mj = j < mid ? zero : vj4;
#elif MDBC
            const float4 mj = j < mid ? zero : mdbc[j];
#else
            const float4 mj = zero;
#endif
            fluid_pair(r, r2, pi, pj, j < mid, wj, mj, acc);
        } else {
            boundary_pair(r, r2, pi, pj, acc);
        }
    }
}

// The same, j's position read here.
__device__ __forceinline__ void force_candidate(unsigned j, unsigned mid, float bx, float by, float bz, bool fluid,
                                                const PairParticle &pi, const float4 *__restrict__ pos,
                                                const float4 *__restrict__ vel, const float4 *__restrict__ wall,
                                                const float4 *__restrict__ mdbc, Accum &acc) {
    force_candidate_at(pos[j], j, mid, bx, by, bz, fluid, pi, vel, wall, mdbc, acc);
}

// The force pass's result for particle i (fluid: its acceleration with the body force;
// otherwise its density rate only) and the fluid's maxima for the stats.
__device__ __forceinline__ void force_out(int i, bool fluid, const PairParticle &pi, const Accum &acc,
                                          float4 *__restrict__ force, float4 *__restrict__ shift, float &acc_norm,
                                          float &visc_max) {
    if (fluid) {
        float3 a = acc.acc + v3(GX, GY, GZ);
#if WALL_FN
        a += wall_shear(pi.vel, acc.wall, WALL_Y_MIN, WALL_NU);
#else
        (void)pi;
#endif
        force[i] = make_float4(a.x, a.y, a.z, acc.drho * INV_RHO0);
        acc_norm = sqrtf(norm2(a));
        visc_max = acc.visc_max;
    } else {
        force[i] = make_float4(0.0f, 0.0f, 0.0f, acc.drho * INV_RHO0);
    }
#if SHIFT
    shift[i] = make_float4(acc.grad_c.x, acc.grad_c.y, acc.grad_c.z, acc.div_r);
#endif
}

#if TRAVERSAL >= 2
// The pencil traversal (issue 16; after Algis et al., "Efficient GPU implementation of
// particle interactions with cutoff radius and few particles per cell": X-pencil loads into
// shared memory). A block whose particles all lie in one row of cells along RA (sorted by
// cell, they are consecutive cells of it) takes each of its stencil's rows (25 in 3D, 5 in
// 2D) as one segment, the cells from R before its first particle's cell to R after its last
// one's, read into shared memory by the block tile by tile (PENCIL_TILE particles, one
// coalesced load a thread) instead of by every lane from L1. Each lane walks its own cells
// of the tile in the order of TRAVERSAL 1 (RowWalk, paused at the tile's end). A block
// across rows reads the same walk's candidates from global memory (no tiles): one loop, one
// pair arithmetic for every particle, so a particle's sum does not depend on the block it
// falls in (a team of devices, whose blocks start elsewhere, reproduces one device).
#define PENCIL_TILE 256
#define CTA_THREADS 64


// Particle i's part of the force pass (an idle lane, !active, gets zeros and sums nothing):
// its position offset, its pair values, its kind and whether it sums (as in the kernel of
// TRAVERSAL 0 and 1).
struct ForceI {
    float4 p4;
    PairParticle pi;
    bool fluid, sums;
};
__device__ __forceinline__ ForceI force_i(unsigned i, bool active, const float4 *__restrict__ pos,
                                          const float4 *__restrict__ vel, const Info *__restrict__ info) {
    float4 p4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), v4 = p4;
    bool fluid = false, sums = false;
    if (active) {
        p4 = pos[i], v4 = vel[i];
        const unsigned kind = info_kind(info[i]);
        fluid = kind == 0u;
        sums = fluid || (!MDBC && kind == 1u);
    }
    PairParticle pi = {xyz(v4), RHO0 * (1.0f + v4.w), pressure_of(v4.w), MASS};
    pi.inv_rho = 1.0f / pi.rho;
    return {p4, pi, fluid, sums};
}

#endif

#if TRAVERSAL == 3
// The CTA traversal (issue 16; after Huang et al., "A general novel parallel framework for
// SPH-centric algorithms": a CTA per cell, its neighbour cells staged in shared memory).
// Cells of the whole support (compile.rs: reach 1, 27 cells, 9 rows of 3), about 64
// particles each at h = 2 dp. A block of CTA_THREADS threads takes the cells whose first
// particle lies in its window of CTA_THREADS particles of first..first+count, one after
// the other, each in chunks of CTA_THREADS particles, a thread a particle. For each of the
// cell's stencil rows the block reads the row's particles into shared memory tile by tile,
// and every lane walks the whole row in storage order (RowWalk), the same candidates in
// step: loads broadcast from shared memory, one trip count for the warp. The rows go as
// TRAVERSAL 1's, so a particle's sum is the one ranges would give with these cells, and
// does not depend on the block (teams bitwise one device).
extern "C" __global__ void __launch_bounds__(CTA_THREADS) forces_kernel(FORCES_PARAMS) {
    __shared__ float4 tile[CTA_THREADS];
    const CellTable table = force_table(cell_start, fluid_counts, wlo, whi);
    const unsigned lo_i = (unsigned)first, hi_i = (unsigned)(first + count);
    const unsigned w0 = lo_i + blockIdx.x * CTA_THREADS, w1 = min(w0 + CTA_THREADS, hi_i);
    float acc_norm = 0.0f, visc_max = 0.0f;
    // Block-uniform: every lane reads the same cell bounds.
    for (unsigned at = w0; at < w1;) {
        const int4 ck = cell_coords(pos[at].w);
        const unsigned k = cell_linear(ck.x, ck.y, ck.z, wlo);
        const unsigned cb = max(table.begin(k), lo_i), ce = min(table.end(k), hi_i);
        if (cb < at) {  // the cell began in an earlier window: that block's
            at = ce;
            continue;
        }
        const int c[3] = {ck.x, ck.y, ck.z};
        for (unsigned c0 = cb; c0 < ce; c0 += CTA_THREADS) {
            const unsigned i = c0 + threadIdx.x;
            const bool active = i < ce;
            const ForceI f = force_i(i, active, pos, vel, info);
            Accum acc = {v3(0.0f, 0.0f, 0.0f), 0.0f, 0.0f, v3(0.0f, 0.0f, 0.0f), 0.0f};
            const float p[3] = {f.p4.x, f.p4.y, f.p4.z};
            // The lanes share the cell, so its rows (stencil_rows' conditions are the
            // block's) and the barriers in them.
            stencil_rows<false>(c, p, wlo, whi, [&](unsigned k0, unsigned k1, float b[3]) {
                RowWalk w;
                w.start(table, k0, k1, !f.fluid, f.sums);
                const unsigned seg0 = table.begin(k0), seg1 = table.end(k1);
                for (unsigned base = seg0; base < seg1; base += CTA_THREADS) {
                    __syncthreads();  // the last tile's readers are done
                    if (base + threadIdx.x < seg1) tile[threadIdx.x] = pos[base + threadIdx.x];
                    __syncthreads();
                    w.run(table, !f.fluid, b, min(base + CTA_THREADS, seg1),
                          [&](unsigned j, unsigned mid, const float bb[3]) {
                              force_candidate_at(tile[j - base], j, mid, bb[0], bb[1], bb[2], f.fluid, f.pi, vel,
                                                 wall, mdbc, acc);
                          });
                }
            });
            if (active) {
                float an = 0.0f, vm = 0.0f;
                force_out((int)i, f.fluid, f.pi, acc, force, shift, an, vm);
                acc_norm = fmaxf(acc_norm, an), visc_max = fmaxf(visc_max, vm);
            }
        }
        at = ce;
    }
    block_max2(acc_norm, visc_max, stats, STAT_ACC, STAT_VISC);
}
#endif

#if TRAVERSAL == 2
extern "C" __global__ void __launch_bounds__(256, FORCES_MIN_BLOCKS) forces_kernel(FORCES_PARAMS) {
    __shared__ float4 tile[PENCIL_TILE];
    __shared__ int s_row[2], s_lo, s_hi;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = first + t;
    const bool active = t < count;
    float acc_norm = 0.0f, visc_max = 0.0f;
    const ForceI f = force_i((unsigned)i, active, pos, vel, info);
    Accum acc = {v3(0.0f, 0.0f, 0.0f), 0.0f, 0.0f, v3(0.0f, 0.0f, 0.0f), 0.0f};
    const CellTable table = force_table(cell_start, fluid_counts, wlo, whi);
    const int n[3] = {NX, NY, NZ};
    // The outer axes: O0 and O1 in 3D, O0 in 2D (z has one cell there), as stencil_rows.
    const int ua = O0, wa = DIM == 3 ? O1 : O2;
    const int4 ci = cell_coords(f.p4.w);
    int c[3] = {ci.x, ci.y, ci.z};
    const float p[3] = {f.p4.x, f.p4.y, f.p4.z};
    // The block's row and lowest cell along RA from its first particle (the launch covers
    // count: thread 0 is active; sorted by cell, it has the lowest), its highest from all.
    if (threadIdx.x == 0) s_row[0] = c[ua], s_row[1] = c[wa], s_lo = c[RA], s_hi = c[RA];
    __syncthreads();
    if (active) atomicMax(&s_hi, c[RA]);
    const bool tiled = __syncthreads_and(!active || (c[ua] == s_row[0] && c[wa] == s_row[1]));
    // An idle lane of a tiled block takes the block's row, so that it passes the same
    // barriers (its walk is empty).
    if (!active) c[ua] = s_row[0], c[wa] = s_row[1], c[RA] = s_lo;
    const int lo = max(-R, -c[RA]);
    const int x0 = max(s_lo - R, 0), x1 = min(s_hi + R, n[RA] - 1);
    // Tiled, the lanes share the rows (stencil_rows' conditions are the block's) and the
    // barriers in them.
    stencil_rows<false>(c, p, wlo, whi, [&](unsigned k0, unsigned k1, float b[3]) {
        RowWalk w;
        w.start(table, k0, k1, !f.fluid, f.sums);
        // The block's segment of this row (tiled), or one pass over global memory.
        const unsigned kr = k0 - (unsigned)(c[RA] + lo);
        const unsigned seg0 = tiled ? table.begin(kr + (unsigned)x0) : 0u;
        const unsigned seg1 = tiled ? table.end(kr + (unsigned)x1) : 1u;
        for (unsigned base = seg0; base < seg1; base += PENCIL_TILE) {
            const float4 *src = pos;
            unsigned off = 0u, limit = 0xffffffffu;
            if (tiled) {
                __syncthreads();  // the last tile's readers are done
                const unsigned at = base + threadIdx.x;
                if (at < seg1) tile[threadIdx.x] = pos[at];
                __syncthreads();
                src = tile, off = base, limit = min(base + PENCIL_TILE, seg1);
            }
            w.run(table, !f.fluid, b, limit, [&](unsigned j, unsigned mid, const float bb[3]) {
                force_candidate_at(src[j - off], j, mid, bb[0], bb[1], bb[2], f.fluid, f.pi, vel, wall, mdbc, acc);
            });
        }
    });
    if (active) force_out(i, f.fluid, f.pi, acc, force, shift, acc_norm, visc_max);
    block_max2(acc_norm, visc_max, stats, STAT_ACC, STAT_VISC);
}
#elif TRAVERSAL != 3
// The particles first..first+count only (a part of the owned range: the edges or the
// inner particles); neighbours are any held particle in the window [wlo, whi), whose
// pressures come from their densities here (no pressure buffer to fill beforehand).
extern "C" __global__ void __launch_bounds__(256, FORCES_MIN_BLOCKS) forces_kernel(FORCES_PARAMS) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = first + t;
    float acc_norm = 0.0f, visc_max = 0.0f;
    if (t < count) {
        const float4 p4 = pos[i];
        const float4 v4 = vel[i];
        const int4 ci = cell_coords(p4.w);
        const bool fluid = info_kind(info[i]) == 0u;
        PairParticle pi = {xyz(v4), RHO0 * (1.0f + v4.w), pressure_of(v4.w), MASS};
        pi.inv_rho = 1.0f / pi.rho;
        Accum acc = {v3(0.0f, 0.0f, 0.0f), 0.0f, 0.0f, v3(0.0f, 0.0f, 0.0f), 0.0f};
        // mDBC: a boundary particle's density comes from mdbc_kernel; it sums nothing here
        // (an empty loop: force 0, density rate 0).
        // A buffer particle of an open boundary (kind 2) sums nothing either: its pass sets it.
        const bool sums = fluid || (!MDBC && info_kind(info[i]) == 1u);
#if TABLE_BINS == 1
        // The fluid counts as an argument (their address cell_table would compute): a register
        // fewer held through the loop (ptxas: 36 bytes spilled instead of 52). Written out
        // here, not through force_table: the compiler arranges this kernel's loop otherwise.
        const CellTable table = {cell_start, fluid_counts};
#else
        const CellTable table = cell_table(cell_start, wlo, whi);
        (void)fluid_counts;
#endif
#if TRAVERSAL == 1
        const int c[3] = {ci.x, ci.y, ci.z};
        const float p[3] = {p4.x, p4.y, p4.z};
        if (sums) {
            stencil_rows<true>(c, p, wlo, whi, [&](unsigned k, unsigned kend, float b[3]) {
                row_particles(table, k, kend, !fluid, b, [&](unsigned j, unsigned mid, const float b[3]) {
                    force_candidate(j, mid, b[0], b[1], b[2], fluid, pi, pos, vel, wall, mdbc, acc);
                });
            });
        }
#else
        const int zlo = DIM == 3 ? -R : 0, zhi = sums ? (DIM == 3 ? R : 0) : zlo - 1;
        for (int dz = zlo; dz <= zhi; ++dz) {
            int cz;
            if (!neighbour_axis(ci.z, dz, NZ, PERZ, cz) || !in_window(2, cz, wlo, whi)) continue;
            for (int dy = -R; dy <= R; ++dy) {
                int cy;
                if (!neighbour_axis(ci.y, dy, NY, PERY, cy) || !in_window(1, cy, wlo, whi)) continue;
                for (int dx = -R; dx <= R; ++dx) {
                    int cx;
                    if (!neighbour_axis(ci.x, dx, NX, PERX, cx) || !in_window(0, cx, wlo, whi)) continue;
                    const unsigned k = cell_linear(cx, cy, cz, wlo);
                    const unsigned s = table.begin(k), mid = table.mid(k);
                    const unsigned e = fluid ? table.end(k) : mid;
                    const float bx = p4.x - (float)dx * CSX, by = p4.y - (float)dy * CSY, bz = p4.z - (float)dz * CSZ;
                    for (unsigned j = s; j < e; ++j)
                        force_candidate(j, mid, bx, by, bz, fluid, pi, pos, vel, wall, mdbc, acc);
                }
            }
        }
#endif
        force_out(i, fluid, pi, acc, force, shift, acc_norm, visc_max);
    }
    block_max2(acc_norm, visc_max, stats, STAT_ACC, STAT_VISC);
}
#endif

// ---- ghost nodes (mDBC walls and open boundaries) ------------------------------------

// The sums of a ghost node at offset og from the centre of cell c (any length: re-centred on
// the cell that holds it, as rekey_kernel would) over the particles of the fluid bins of its
// stencil within the support, in stencil then storage order (TRAVERSAL 0, the CPU's order) or
// row by row (1, 2 and 3). OPEN_SUMS, the open boundaries' sums, skips their buffer particles and
// sums the velocity's gradient rows for their first-order velocity (twin of
// crates/surge-cpu/src/mdbc.rs, ghost_sums: its `take` of fluid only, and VEL_FIRST).
// The cell `cg` that holds a ghost node at offset og from the centre of cell c, and its
// offset `o` from that cell's centre (as rekey_kernel would place it; not clamped).
__device__ __forceinline__ void ghost_cell(float3 og, int4 c, int cg[3], float o[3]) {
    cg[0] = c.x, cg[1] = c.y, cg[2] = c.z;
    o[0] = og.x, o[1] = og.y, o[2] = og.z;
    const float cs[3] = {CSX, CSY, CSZ};
    for (int a = 0; a < DIM; ++a) {
        const float k = roundf(o[a] / cs[a]);
        cg[a] += (int)k;
        o[a] = o[a] - k * cs[a];
    }
}

template <bool OPEN_SUMS>
__device__ __forceinline__ void ghost_sums(float3 og, int4 c, int wlo, int whi, const float4 *__restrict__ pos,
                                           const float4 *vel, const Info *__restrict__ info,
                                           const unsigned *__restrict__ cell_start, GhostSums &s) {
    int cg[3];
    float o[3];
    ghost_cell(og, c, cg, o);
    for (int row = 0; row < 4; ++row)
        for (int k = 0; k < 4; ++k) {
            s.a[row][k] = 0.0f;
            s.b[row][k] = 0.0f;
        }
    // One fluid-bin particle j of the stencil, b the node's offset from j's cell centre.
    auto candidate = [&](unsigned j, const float b[3]) {
        if (OPEN_SUMS && info_kind(info[j]) != 0u) return;
        const float4 pj4 = pos[j];
        const float3 r = v3(b[0] - pj4.x, b[1] - pj4.y, b[2] - pj4.z);
        const float r2 = norm2(r);
        if (r2 < SUPPORT2) {
            const float q = sqrtf(r2);
            const float4 vj4 = vel[j];
            const float vol = MASS / (RHO0 * (1.0f + vj4.w));
            ghost_add<OPEN_SUMS>(s, r, KERNEL_W(q), r * KERNEL_F(q), vol, vj4.w, xyz(vj4));
        }
    };
    const CellTable table = cell_table(cell_start, wlo, whi);
#if TRAVERSAL >= 1
    stencil_rows<true>(cg, o, wlo, whi, [&](unsigned k, unsigned kend, float b[3]) {
        row_particles(table, k, kend, true, b, [&](unsigned j, unsigned, const float b[3]) { candidate(j, b); });
    });
#else
    const int zlo = DIM == 3 ? -R : 0, zhi = DIM == 3 ? R : 0;
    for (int dz = zlo; dz <= zhi; ++dz) {
        int cz;
        if (!neighbour_axis(cg[2], dz, NZ, PERZ, cz) || !in_window(2, cz, wlo, whi)) continue;
        for (int dy = -R; dy <= R; ++dy) {
            int cy;
            if (!neighbour_axis(cg[1], dy, NY, PERY, cy) || !in_window(1, cy, wlo, whi)) continue;
            for (int dx = -R; dx <= R; ++dx) {
                int cx;
                if (!neighbour_axis(cg[0], dx, NX, PERX, cx) || !in_window(0, cx, wlo, whi)) continue;
                const unsigned k = cell_linear(cx, cy, cz, wlo);
                const unsigned s0 = table.begin(k), mid = table.mid(k);
                const float b[3] = {o[0] - (float)dx * CSX, o[1] - (float)dy * CSY, o[2] - (float)dz * CSZ};
                for (unsigned j = s0; j < mid; ++j) candidate(j, b);
            }
        }
    }
#endif
}

// ---- mDBC --------------------------------------------------------------------------

#if MDBC
// At the end of each rebuild: list in `list` (kept until the next rebuild) the boundary
// particles of first..first+count whose ghost node lies within the support (0 < dist < 2h),
// `listed[0]` of them (zeroed before); the others' mdbc values become their own velocity and
// density, as they stay until the next rebuild (walls move at constant velocities). A warp's
// entries go together (one atomicAdd per warp); the order of the warps does not matter, as
// each entry of mdbc_kernel writes only its own particle.
extern "C" __global__ void mdbc_list_kernel(int first, int count, const float4 *__restrict__ vel,
                                            const Info *__restrict__ info, const float4 *__restrict__ wall,
                                            float4 *__restrict__ mdbc, unsigned *__restrict__ list,
                                            unsigned *__restrict__ listed) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = first + t;
    bool keep = false;
    if (t < count && info_kind(info[i]) != 0u) {
        const float dist = wall[i].w;
        keep = dist > 0.0f && dist < 2.0f * H;
#if !MDBC_IN_VEL
        if (!keep) mdbc[i] = vel[i];
#endif
    }
    const unsigned mask = __ballot_sync(0xffffffffu, keep);
    if (mask == 0u) return;
    const int lane = threadIdx.x & 31, leader = __ffs(mask) - 1;
    unsigned base = 0u;
    if (lane == leader) base = atomicAdd(listed, (unsigned)__popc(mask));
    base = __shfl_sync(0xffffffffu, base, leader);
    if (keep) list[base + __popc(mask & ((1u << lane) - 1u))] = (unsigned)i;
}

// After mdbc_list_kernel: the sort key of each of the `count` entries of the list (count an
// upper bound of its length `listed[0]`): twice the linear index of the cell that holds the
// entry's ghost node (clamped into the window), `dummy` past the list's end. A counting
// sort on these keys (histogram_kernel, the scan, scatter_kernel, as for the particles)
// orders the list by ghost cell, so that the lanes of a warp of mdbc_kernel walk one
// stencil: the same candidates, in step, each load the same for all. The order changes no
// value, as each entry writes only its own particle.
extern "C" __global__ void mdbc_ghost_key_kernel(int count, const unsigned *__restrict__ listed,
                                                 const unsigned *__restrict__ list, int wlo, int whi, unsigned dummy,
                                                 const float4 *__restrict__ pos, const float4 *__restrict__ wall,
                                                 unsigned *__restrict__ gkey) {
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (unsigned)count) return;
    if (t >= *listed) {
        gkey[t] = dummy;
        return;
    }
    const int i = (int)list[t];
    float3 og = v3(0.0f, 0.0f, 0.0f);
    const float4 p4 = pos[i];
    ghost_offset(xyz(p4), wall[i], 2.0f * H, og);  // true: the list holds only those
    int cg[3];
    float o[3];
    ghost_cell(og, cell_coords(p4.w), cg, o);
    const int n[3] = {NX, NY, NZ};
    for (int a = 0; a < 3; ++a) {
        const int lo = a == O0 ? wlo : 0, hi = a == O0 ? whi : n[a];
        cg[a] = min(max(cg[a], lo), hi - 1);
    }
    gkey[t] = cell_linear(cg[0], cg[1], cg[2], wlo);
}

// Static walls (MDBC_IN_VEL: no moving solid, every wall at rest), once the list is ordered by
// ghost cell (above): entry t of the ordered list as its particle's cell k and its place in
// that cell's boundary bin, in one word (k << MDBC_FIX_BITS | place; `bad` set where k or the
// place does not fit). A wall particle at rest keeps its cell, and a bin orders its particles
// by id (order_bins_kernel), so while a device's window holds the same wall particles these
// words name the same particles after every later sort: the list and its order are made once,
// not at every rebuild (crates/surge-cuda/src/backend/mdbc.rs).
#define MDBC_FIX_BITS 6u
extern "C" __global__ void mdbc_fix_kernel(int count, const unsigned *__restrict__ listed,
                                           const unsigned *__restrict__ list, const unsigned *__restrict__ order,
                                           int wlo, int whi, const float4 *__restrict__ pos,
                                           const unsigned *__restrict__ cell_start, unsigned *__restrict__ fixed,
                                           unsigned *__restrict__ bad) {
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (unsigned)count || t >= *listed) return;
    const unsigned i = list[order[t]];
    const int4 c = cell_coords(pos[i].w);
    const unsigned k = cell_linear(c.x, c.y, c.z, wlo);
    const unsigned place = i - cell_table(cell_start, wlo, whi).mid(k);
    if (k >= (1u << (32u - MDBC_FIX_BITS)) || place >= (1u << MDBC_FIX_BITS)) atomicOr(bad, 1u);
    fixed[t] = (k << MDBC_FIX_BITS) | place;
}

// Twin of crates/surge-cpu/src/mdbc.rs, before each force pass: each boundary particle of
// the list (mdbc_list_kernel: the owned ones and the copies within R layers of them whose
// ghost lies within 2h; `order` its entries by ghost cell, mdbc_ghost_key_kernel) takes its
// relative density (vel.w) and the velocity the viscous term sees (mdbc, with the density in
// w) from its ghost node x_b + 2 dist n, summed over the fluid of the ghost's stencil in the
// traversal's order (ghost_sums). One thread per listed particle, none spent on fluid or
// deep wall particles. Its 91 registers are held to 64 (four blocks per multiprocessor),
// which hides the neighbour loads' latency better than fewer spills do. H100, dam_break_3d
// at dp 0.006: the pass went from 3.5 ms (one thread per particle, 91 registers) to 2.3 (64)
// and 1.8 (the list); docs/PERFORMANCE.md.
// Reads only fluid entries of vel and writes only listed boundary entries.
#ifndef MDBC_MIN_BLOCKS
#error "MDBC_MIN_BLOCKS: defined by compile.rs (mdbc_min_blocks)"
#endif
extern "C" __global__ void __launch_bounds__(256, MDBC_MIN_BLOCKS)
    mdbc_kernel(const unsigned *__restrict__ list, const unsigned *__restrict__ order,
                const unsigned *__restrict__ listed, int wlo, int whi, const float4 *__restrict__ pos, float4 *vel,
                const float4 *__restrict__ wall, const Info *__restrict__ info,
                const unsigned *__restrict__ cell_start, float4 *__restrict__ mdbc, int fixed) {
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= *listed) return;
    int i;
    if (fixed) {
        // Static walls: `list` holds, in order, each entry's cell and place in its boundary
        // bin (mdbc_fix_kernel).
        const unsigned f = list[t];
        i = (int)(cell_table(cell_start, wlo, whi).mid(f >> MDBC_FIX_BITS) + (f & ((1u << MDBC_FIX_BITS) - 1u)));
    } else {
        i = (int)list[order[t]];
    }
    const float4 p4 = pos[i], w4 = wall[i], v4 = vel[i];
    float3 og;
    if (!ghost_offset(xyz(p4), w4, 2.0f * H, og)) return;  // not listed
    GhostSums s;
    ghost_sums<false>(og, cell_coords(p4.w), wlo, whi, pos, vel, nullptr, cell_start, s);
    // The case's slip, the other one on the solids of Case::mdbc_other_slip (Slips::of in
    // crates/surge-cpu/src/mdbc.rs).
    bool other = false;
#if MDBC_OTHER_SLIP
    {
        const unsigned ranges[2 * MDBC_OTHER_SLIP] = {MDBC_OTHER_SLIP_IDS};
        const unsigned id = info_id(info[i]);
        for (int k = 0; k < MDBC_OTHER_SLIP; ++k) other = other || (id >= ranges[2 * k] && id < ranges[2 * k + 1]);
    }
#endif
    // 0 no-slip, 1 free slip, 2 the wall's velocity (which has no other: the case refuses it).
    const int slip = MDBC == 3 ? 2 : (int)((MDBC == 2) != other);
#if MDBC_IN_VEL
    // The wall is at rest: its velocity is zero, and its velocity buffer takes the mDBC
    // values (the update puts them back to zero).
    vel[i] = mdbc_state(s, w4, v3(0.0f, 0.0f, 0.0f), slip);
#else
    const float4 st = mdbc_state(s, w4, xyz(v4), slip);
    mdbc[i] = st;
    vel[i] = make_float4(v4.x, v4.y, v4.z, st.w);
#endif
}
#endif

// ---- open boundaries (issue 15) -----------------------------------------------------

#if OPEN
// Twin of surge_core::open and crates/surge-cpu/src/open.rs. The zone table (doubles):
// OPEN_HEAD values (grid origin xyz, cell size xyz, dp, every inlet's columns, |g|), then
// OPEN_ZONE per zone: inlet, axis, sign, plane, thickness, min xyz, max xyz, the speed now
// (NaN: extrapolated), profile (0 uniform, 1 parabolic), profile mean, pressure kind (0
// extrapolated, 1 fixed, 2 hydrostatic), its value (the fixed relative density, or the
// level), layers.
#define OPEN_HEAD 9
#define OPEN_ZONE 17

// Absolute position (as Grid::absolute).
__device__ __forceinline__ void open_absolute(const double *t, int4 c, float4 p, double x[3]) {
    x[0] = t[0] + ((double)c.x + 0.5) * t[3] + (double)p.x;
    x[1] = t[1] + ((double)c.y + 0.5) * t[4] + (double)p.y;
    x[2] = t[2] + ((double)c.z + 0.5) * t[5] + (double)p.z;
}

__device__ __forceinline__ bool open_across(const double *z, const double x[3]) {
    const int axis = (int)z[1];
    for (int b = 0; b < DIM; ++b)
        if (b != axis && (x[b] < z[5 + b] || x[b] > z[8 + b])) return false;
    return true;
}

__device__ __forceinline__ double open_xi(const double *z, const double x[3]) { return z[2] * (x[(int)z[1]] - z[3]); }

// OpenZone::holds through zone_of: the zone of a buffer particle, or -1.
__device__ __forceinline__ int open_zone_of(const double *t, int nz, const double x[3]) {
    for (int k = 0; k < nz; ++k) {
        const double *z = t + OPEN_HEAD + OPEN_ZONE * k;
        const double xi = open_xi(z, x), th = z[4];
        const double lo = z[0] != 0.0 ? -2.0 * th : -th, hi = z[0] != 0.0 ? th : 2.0 * th;
        if (open_across(z, x) && xi >= lo && xi <= hi) return k;
    }
    return -1;
}

// OpenZone::profile_at.
__device__ __forceinline__ double open_profile(const double *z, const double x[3]) {
    if (z[12] == 0.0) return 1.0;
    const int axis = (int)z[1];
    double f = 1.0;
    for (int b = 0; b < DIM; ++b) {
        if (b == axis) continue;
        const double s = fmin(fmax((x[b] - z[5 + b]) / (z[8 + b] - z[5 + b]), 0.0), 1.0);
        f *= 6.0 * s * (1.0 - s);
    }
    return f / z[13];
}

// Before each force pass (crates/surge-cpu/src/open.rs, pass): each buffer particle of
// first..first+count takes its velocity and relative density from its zone (prescribed) or
// from the fluid at its ghost node, its mirror image across the plane (OpenZone::state).
// Reads only fluid entries of vel and writes only buffer entries.
extern "C" __global__ void open_kernel(int first, int count, int wlo, int whi, const float4 *__restrict__ pos,
                                       float4 *vel, const Info *__restrict__ info,
                                       const unsigned *__restrict__ cell_start, const double *__restrict__ table,
                                       int nz) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    const int i = first + t;
    if (info_kind(info[i]) != 2u) return;
    const float4 p4 = pos[i], v4 = vel[i];
    const int4 ci = cell_coords(p4.w);
    double x[3];
    open_absolute(table, ci, p4, x);
    const int k = open_zone_of(table, nz, x);
    if (k < 0) return;
    const double *z = table + OPEN_HEAD + OPEN_ZONE * k;
    const int axis = (int)z[1];
    // The ghost node: the particle's mirror image across the plane.
    const float shift = (float)(2.0 * (z[3] - x[axis]));
    float o[3] = {p4.x, p4.y, p4.z};
    o[axis] += shift;
    GhostSums s;
    ghost_sums<true>(v3(o[0], o[1], o[2]), ci, wlo, whi, pos, vel, info, cell_start, s);
    float gd;
    float3 ggrad, gvel;
    const bool have = ghost_values(s, true, gd, ggrad, gvel);
    float3 v = xyz(v4);
    if (!isnan(z[11])) {
        float vv[3] = {0.0f, 0.0f, 0.0f};
        vv[axis] = (float)(z[2] * z[11] * open_profile(z, x));
        v = v3(vv[0], vv[1], vv[2]);
    } else if (have) {
        v = gvel;
    }
    float d = v4.w;
    if (z[14] == 1.0) {
        d = (float)z[15];
    } else if (z[14] == 2.0) {
        d = tait_density((float)(RHO0 * table[8] * fmax(z[15] - x[DIM - 1], 0.0)), TAIT_B, GAMMA, PB);
    } else if (have) {
        float tb[3] = {0.0f, 0.0f, 0.0f};
        tb[axis] = -shift;
        d = gd + dot(ggrad, v3(tb[0], tb[1], tb[2]));
    }
    vel[i] = make_float4(v.x, v.y, v.z, d);
}

// A rebuild's first step at the planes (surge_core::open::action; crates/surge-cpu/src/
// open.rs, rebuild), over the owned particles first..first+count. Counting pass (write 0):
// counters[0] gets the particles the inlets will make, nothing changes. Writing pass: kinds
// change in place, an outflowing particle is marked (CELL_REMOVED, counters[1]; the rekey
// leaves it and the sort drops it), and each inlet particle that entered the fluid becomes
// fluid and puts a new buffer particle at n + counters[0] (room must exist), `layers dp`
// upstream, id + columns * layers (counters[2]: the lowest id past 2^32, else 0xffffffff).
extern "C" __global__ void open_rebuild_kernel(int first, int count, int n, int write, float4 *pos, float4 *vel,
                                               Info *info, float4 *vel_prev, int has_wall, float4 *wall,
                                               const double *__restrict__ table, int nz, unsigned *counters) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    const int i = first + t;
    const Info in = info[i];
    if (info_kind(in) == 1u) return;
    const float4 p4 = pos[i];
    const int4 c = cell_coords(p4.w);
    double x[3];
    open_absolute(table, c, p4, x);
    // 0 keep, 1 to fluid, 2 to buffer, 3 remove, 4 spawn.
    int act = 0, zk = -1;
    if (info_kind(in) == 0u) {
        for (int k = 0; k < nz && act == 0; ++k) {
            const double *z = table + OPEN_HEAD + OPEN_ZONE * k;
            if (!open_across(z, x)) continue;
            const double xi = open_xi(z, x), th = z[4];
            if (z[0] != 0.0 && xi < 0.0) act = 3;
            else if (z[0] == 0.0 && xi >= 0.0) act = xi <= th ? 2 : 3;
        }
    } else {
        zk = open_zone_of(table, nz, x);
        if (zk < 0) {
            act = 3;
        } else {
            const double *z = table + OPEN_HEAD + OPEN_ZONE * zk;
            const double xi = open_xi(z, x), th = z[4];
            if (z[0] != 0.0) act = xi >= 0.0 ? 4 : (xi < -th ? 3 : 0);
            else act = xi < 0.0 ? 1 : (xi > th ? 3 : 0);
        }
    }
    if (!write) {
        if (act == 4) atomicAdd(&counters[0], 1u);
        return;
    }
    if (act == 1 || act == 4) info[i] = make_info(info_id(in), 0u);
    if (act == 2) info[i] = make_info(info_id(in), 2u);
    if (act == 3) {
        pos[i].w = removed_word();
        atomicAdd(&counters[1], 1u);
    }
    if (act == 4) {
        const double *z = table + OPEN_HEAD + OPEN_ZONE * zk;
        const unsigned slot = (unsigned)n + atomicAdd(&counters[0], 1u);
        const unsigned long long id = (unsigned long long)info_id(in) + (unsigned long long)table[7] * (unsigned long long)z[16];
        if (id > 0xffffffffull) atomicMin(&counters[2], info_id(in));
        float o[3] = {p4.x, p4.y, p4.z};
        o[(int)z[1]] += (float)(-z[2] * z[4]);
        pos[slot] = make_float4(o[0], o[1], o[2], p4.w);
        vel[slot] = vel[i];
        vel_prev[slot] = vel_prev[i];
        if (has_wall) wall[slot] = wall[i];
        info[slot] = make_info((unsigned)id, 2u);
    }
}
#endif

// Move the `spawned` particles held after the n others to the end of the owned ones (which
// end at own_end; the copies from the right follow them): the permutation for a gather.
extern "C" __global__ void rotate_perm_kernel(int n, int own_end, int spawned, unsigned *perm) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n + spawned) return;
    perm[i] = i < own_end ? (unsigned)i : (i < own_end + spawned ? (unsigned)(n + i - own_end) : (unsigned)(i - spawned));
}

// ---- updates -----------------------------------------------------------------------

#define UPDATE_PREDICTOR 0
#define UPDATE_CORRECTOR 1
#define UPDATE_VERLET 2
#define UPDATE_VERLET_EULER 3

// Twin of crates/surge-cpu/src/update.rs. Only the updates of the case's scheme are compiled
// (SCHEME 1: symplectic predictor/corrector; 2: Verlet and its Euler step); pos_prev is unused
// for Verlet.
#if MOTION
// The rigid move of the moving solid that holds particle `id` (36 doubles each, the layout
// of surge_core::motion::SolidMove), or null.
__device__ __forceinline__ const double *solid_move(unsigned id, int nmoves, const double *moves) {
    const double x = (double)id;
    for (int m = 0; m < nmoves; ++m) {
        const double *s = moves + 36 * m;
        if (x >= s[0] && x < s[1]) return s;
    }
    return nullptr;
}
#endif

#if DAMPING
// Damping zones: axis, origin and cell size along it, start, end, strength (case order).
__device__ const double damping_zones[DAMPING][6] = DAMPING_ZONES;
#endif

// Moving solids (MOTION, issue 14): a boundary particle of a moving solid is put where the
// solid's pose at the update's end puts the particle it was at the step start, with that
// pose's velocity (twin of SolidMove::apply, float64), and its wall normal turns (SolidMove::
// turn); with mDBC the mDBC velocity of one too far from the fluid for a ghost node follows.
// Damping zones (DAMPING) scale fluid velocities at full updates (surge_core::motion::Damping).
// The time step on the device (a device alone: the host reads it back with the update's
// statistics instead of waiting for the force pass's): twin of surge_core::step::time_step
// in float64, `cap` the case's fixed limits (Case::limit_dt of infinity), then landing on the
// step's limit `left` ahead (surge_core::step::land). One thread: dt_out[0] the step the
// update takes, dt_out[1] the step before landing (what a collapse is judged by).
extern "C" __global__ void dt_kernel(const unsigned *__restrict__ stats, double cfl, double h, double c0, double cap,
                                     double left, double *__restrict__ dt_out) {
    const double a = (double)__uint_as_float(stats[0]), visc = (double)__uint_as_float(stats[1]);
    const double forces = a > 0.0 ? sqrt(h / a) : __longlong_as_double(0x7ff0000000000000LL);
    const double dt = fmin(cfl * fmin(forces, h / (c0 + visc)), cap);
    dt_out[0] = dt >= left * 0.99 ? left : dt;
    dt_out[1] = dt;
}

// `dt_dev` (not null): the time step dt_kernel left on the device, instead of `dt`.
extern "C" __global__ void update_kernel(int n, int which, float dt, float4 *pos, float4 *vel, float4 *vel_prev,
                                         float4 *pos_prev, const float4 *force, const Info *info, const float4 *shift,
                                         unsigned *stats, float4 *wall, float4 *mdbc, int nmoves,
                                         const double *moves, const double *dt_dev) {
    if (dt_dev) dt = (float)*dt_dev;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float disp = 0.0f, speed = 0.0f;
    if (i < n) {
        const bool fluid = info_kind(info[i]) == 0u;
        const float half = 0.5f * dt;
        const float4 p4 = pos[i], f4 = force[i];
#if MDBC_IN_VEL
        // A wall particle's velocity buffer holds the last mDBC pass's values; the wall is at
        // rest (compile.rs, mdbc_in_vel).
        const float4 v4 = info_kind(info[i]) == 1u ? make_float4(0.0f, 0.0f, 0.0f, vel[i].w) : vel[i];
#else
        const float4 v4 = vel[i];
#endif
        const float3 x = xyz(p4), v = xyz(v4), acc = xyz(f4);
        const float d = v4.w, dd = f4.w;
        float3 x1, v1;
        float d1;
#if SCHEME == 1  // symplectic: predictor and corrector only
        if (which == UPDATE_PREDICTOR) {
            pos_prev[i] = p4;
            vel_prev[i] = v4;
            v1 = fluid ? v + acc * half : v;
            x1 = x + v * half;
            d1 = d + dd * half;
        } else {  // UPDATE_CORRECTOR
            const float4 x04 = pos_prev[i], v04 = vel_prev[i];
            const float3 x0 = xyz(x04), v0 = xyz(v04);
            v1 = fluid ? v0 + acc * dt : v0;
            x1 = x0 + (v0 + v1) * half;
            d1 = v04.w + dd * dt;
        }
#else  // Verlet and its periodic Euler step
        {
            const float4 vp4 = vel_prev[i];
            const bool verlet = which == UPDATE_VERLET;
            const float3 vb = verlet ? xyz(vp4) : v;
            const float db = verlet ? vp4.w : d;
            const float k = verlet ? 2.0f * dt : dt;
            vel_prev[i] = v4;
            if (fluid) {
                x1 = x + v * dt + acc * (half * dt);
                v1 = vb + acc * k;
            } else {
                x1 = x + v * dt;
                v1 = v;
            }
            d1 = db + dd * k;
        }
#endif
#if MOTION
        const double *mv = fluid ? nullptr : solid_move(info_id(info[i]), nmoves, moves);
        if (mv) {
            const float3 b = which == UPDATE_CORRECTOR ? xyz(pos_prev[i]) : x;
            const int4 c = cell_coords(p4.w);
            const double q[3] = {mv[2] + (double)c.x * mv[5], mv[3] + (double)c.y * mv[6], mv[4] + (double)c.z * mv[7]};
            const double sv[3] = {q[0] + (double)b.x, q[1] + (double)b.y, q[2] + (double)b.z};
            double r[3];
            for (int k = 0; k < 3; ++k) r[k] = mv[8 + 3 * k] * sv[0] + mv[9 + 3 * k] * sv[1] + mv[10 + 3 * k] * sv[2];
            x1 = v3((float)(r[0] - q[0] + mv[17]), (float)(r[1] - q[1] + mv[18]), (float)(r[2] - q[2] + mv[19]));
            v1 = v3((float)(mv[20] + (mv[24] * r[2] - mv[25] * r[1])), (float)(mv[21] + (mv[25] * r[0] - mv[23] * r[2])),
                    (float)(mv[22] + (mv[23] * r[1] - mv[24] * r[0])));
        }
#endif
#if DAMPING
        if (fluid && which != UPDATE_PREDICTOR) {
            const int4 c = cell_coords(p4.w);
            float f = 1.0f;
            for (int z = 0; z < DAMPING; ++z) {
                const double *dz = damping_zones[z];
                const int a = (int)dz[0];
                const int ca = a == 0 ? c.x : (a == 1 ? c.y : c.z);
                const float oa = a == 0 ? p4.x : (a == 1 ? p4.y : p4.z);
                const double xa = dz[1] + ((double)ca + 0.5) * dz[2] + (double)oa;
                const double sz = fmin(fmax((xa - dz[3]) / (dz[4] - dz[3]), 0.0), 1.0);
                f *= (float)fmax(1.0 - (double)dt * dz[5] * sz * sz, 0.0);
            }
            v1 = v1 * f;
        }
#endif
#if MDBC
        if (!fluid) d1 = d;  // the density of the last mDBC pass
#else
        if (!fluid) d1 = fmaxf(d1, 0.0f);
#endif
        if (info_kind(info[i]) == 2u) d1 = d;  // a buffer particle: the density of its last pass
#if SHIFT
        if (fluid && which != UPDATE_PREDICTOR) {
            const float4 sh = shift[i];
            if (sh.w >= SHIFT_THRESHOLD) x1 = x1 - xyz(sh) * (SHIFT_AH * sqrtf(norm2(v1)) * dt);
        }
#endif
        const bool ok = isfinite(norm2(x1)) && isfinite(norm2(v1)) && isfinite(d1);
        disp = sqrtf(norm2(x1 - x));
        speed = sqrtf(norm2(v1));
        pos[i] = make_float4(x1.x, x1.y, x1.z, p4.w);
        vel[i] = make_float4(v1.x, v1.y, v1.z, d1);
#if MOTION && (MDBC || VISC == 2)
        if (mv) {
            const float4 w = wall[i];
            const double nx = w.x, ny = w.y, nz = w.z;
            wall[i] = make_float4((float)(mv[26] * nx + mv[27] * ny + mv[28] * nz),
                                  (float)(mv[29] * nx + mv[30] * ny + mv[31] * nz),
                                  (float)(mv[32] * nx + mv[33] * ny + mv[34] * nz), w.w);
#if MDBC
            if (!(w.w > 0.0f && w.w < 2.0f * H)) mdbc[i] = make_float4(v1.x, v1.y, v1.z, mdbc[i].w);
#endif
        }
#endif
        if (!ok) {
            atomicMin(&stats[STAT_BAD_ID], info_id(info[i]));
            disp = 0.0f;
            speed = 0.0f;
        }
    }
    block_max2(disp, speed, stats, STAT_DISP, STAT_VEL);
}

// ---- gauges ------------------------------------------------------------------------

// Kernel sums over fluid for sample points given as cell + offset: out[2k] = sum W V,
// out[2k+1] = sum p W V (double, accumulated in a fixed order per point).
// Only cells of the window [wlo, whi) count (copies included), as on the CPU.
extern "C" __global__ void gauge_sums_kernel(int points, int wlo, int whi, const int4 *pcell, const float4 *poff,
                                             const float4 *pos, const float4 *vel, const unsigned *cell_start,
                                             double *out) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= points) return;
    const int4 c = pcell[k];
    const float4 o = poff[k];
    double w_sum = 0.0, pw_sum = 0.0;
    const CellTable table = cell_table(cell_start, wlo, whi);
    const int zlo = DIM == 3 ? -R : 0, zhi = DIM == 3 ? R : 0;
    for (int dz = zlo; dz <= zhi; ++dz)
        for (int dy = -R; dy <= R; ++dy)
            for (int dx = -R; dx <= R; ++dx) {
                int cx, cy, cz;
                if (!neighbour_axis(c.x, dx, NX, PERX, cx) || !neighbour_axis(c.y, dy, NY, PERY, cy) ||
                    !neighbour_axis(c.z, dz, NZ, PERZ, cz) || !in_window(0, cx, wlo, whi) ||
                    !in_window(1, cy, wlo, whi) || !in_window(2, cz, wlo, whi))
                    continue;
                const unsigned kk = cell_linear(cx, cy, cz, wlo);
                for (unsigned j = table.begin(kk); j < table.mid(kk); ++j) {
                    const float4 pj = pos[j];
                    const double rx = (double)o.x - (double)pj.x - (double)dx * (double)CSX;
                    const double ry = (double)o.y - (double)pj.y - (double)dy * (double)CSY;
                    const double rz = (double)o.z - (double)pj.z - (double)dz * (double)CSZ;
                    const double r2 = rx * rx + ry * ry + rz * rz;
                    if (r2 >= (double)SUPPORT2) continue;
                    const float dj = vel[j].w;
                    const double vol = (double)MASS / ((double)RHO0 * (1.0 + (double)dj));
                    const double w = (double)KERNEL_W((float)sqrt(r2)) * vol;
                    w_sum += w;
                    pw_sum += w * (double)pressure_of(dj);
                }
            }
    out[2 * k] = w_sum;
    out[2 * k + 1] = pw_sum;
}

// Largest coordinate along `axis` of fluid whose vertical (last axis) coordinate is below
// `below`, of the particles first..first+count (the owned ones); coordinates relative to
// the domain origin, as order-preserving float bits.
extern "C" __global__ void front_kernel(int first, int count, int axis, double below_rel, const float4 *pos,
                                        const Info *info, unsigned long long *out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    int i = first + t;
    if (info_kind(info[i]) != 0u) return;
    const float4 p = pos[i];
    const int4 c = cell_coords(p.w);
    const double cs[3] = {CSX, CSY, CSZ};
    const double x[3] = {((double)c.x + 0.5) * cs[0] + (double)p.x, ((double)c.y + 0.5) * cs[1] + (double)p.y,
                         ((double)c.z + 0.5) * cs[2] + (double)p.z};
    if (x[DIM - 1] >= below_rel) return;
    // Positions inside the domain are >= 0 up to rounding: shift by one cell so the double's
    // bits order like its value.
    const double v = x[axis] + cs[axis];
    if (v > 0.0) atomicMax(out, (unsigned long long)__double_as_longlong(v));
}

#include "loads.cu"
