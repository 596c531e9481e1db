// Loads on solids at sample times: twin of crates/surge-cpu/src/loads.rs. Included by
// step.cu after its helpers; never launched within a step.
#include "physics/loads.cuh"

// The fluid's force on each owned boundary particle first..first+count (storage order)
// whose id lies in one of the `nranges` ranges [ranges[2k], ranges[2k + 1]), where it is not
// zero. Each such particle takes the next entry (atomicAdd on `counter`: any order, the host
// sorts by id) of `out`, 12 words each: force xyz (float bits), id, cell offset xyz (float
// bits), 0, cell xyz, 0; at most `capacity` entries are written. Neighbours: the fluid
// particles held in the window [wlo, whi), in stencil then storage order, as forces_kernel.
extern "C" __global__ void boundary_loads_kernel(int first, int count, int wlo, int whi, int nranges,
                                                 const unsigned *ranges, const float4 *pos, const float4 *vel,
                                                 const int4 *cell, const uint2 *info, const float4 *wall,
                                                 const float4 *mdbc, const unsigned *cell_start, unsigned capacity, unsigned *counter,
                                                 unsigned *out) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    const int i = first + t;
    const uint2 in = info[i];
    if (in.y == 0u) return;
    bool wanted = false;
    for (int k = 0; k < nranges; ++k) wanted = wanted || (in.x >= ranges[2 * k] && in.x < ranges[2 * k + 1]);
    if (!wanted) return;
    const float4 p4 = pos[i];
    const float4 v4 = vel[i];
    const int4 ci = cell[i];
    PairParticle pb = {xyz(v4), RHO0 * (1.0f + v4.w), pressure_of(v4.w), p4.w};
#if VISC == 2 && !MDBC
    const float4 wb = wall[i];
#else
    const float4 wb = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#endif
#if MDBC
    const float4 mb = mdbc[i];
#else
    const float4 mb = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#endif
    float3 f = v3(0.0f, 0.0f, 0.0f);
    const int zlo = DIM == 3 ? -R : 0, zhi = DIM == 3 ? R : 0;
    for (int dz = zlo; dz <= zhi; ++dz) {
        int cz;
        if (!neighbour_axis(ci.z, dz, NZ, PERZ, cz) || !in_window(2, cz, wlo, whi)) continue;
        for (int dy = -R; dy <= R; ++dy) {
            int cy;
            if (!neighbour_axis(ci.y, dy, NY, PERY, cy) || !in_window(1, cy, wlo, whi)) continue;
            for (int dx = -R; dx <= R; ++dx) {
                int cx;
                if (!neighbour_axis(ci.x, dx, NX, PERX, cx) || !in_window(0, cx, wlo, whi)) continue;
                const int k = cell_linear(cx, cy, cz, wlo);
                const unsigned s = cell_start[2 * k], mid = cell_start[2 * k + 1];
                const float bx = p4.x - (float)dx * CSX, by = p4.y - (float)dy * CSY, bz = p4.z - (float)dz * CSZ;
                for (unsigned j = s; j < mid; ++j) {
                    const float4 pj4 = pos[j];
                    const float3 r = v3(bx - pj4.x, by - pj4.y, bz - pj4.z);
                    const float r2 = norm2(r);
                    if (r2 < SUPPORT2 && r2 > 0.0f) {
                        const float4 vj4 = vel[j];
                        PairParticle pf = {xyz(vj4), RHO0 * (1.0f + vj4.w), pressure_of(vj4.w), pj4.w};
                        load_pair(r, r2, pb, pf, wb, mb, f);
                    }
                }
            }
        }
    }
    if (f.x == 0.0f && f.y == 0.0f && f.z == 0.0f) return;
    const unsigned e = atomicAdd(counter, 1u);
    if (e >= capacity) return;
    unsigned *o = out + 12 * (size_t)e;
    o[0] = __float_as_uint(f.x);
    o[1] = __float_as_uint(f.y);
    o[2] = __float_as_uint(f.z);
    o[3] = in.x;
    o[4] = __float_as_uint(p4.x);
    o[5] = __float_as_uint(p4.y);
    o[6] = __float_as_uint(p4.z);
    o[7] = 0u;
    o[8] = (unsigned)ci.x;
    o[9] = (unsigned)ci.y;
    o[10] = (unsigned)ci.z;
    o[11] = 0u;
}
