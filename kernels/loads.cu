// Loads on solids at sample times: twin of crates/surge-cpu/src/loads.rs. Included by
// step.cu after its helpers; never launched within a step.
#include "physics/loads.cuh"

#define BODY_WORDS 10

// The spring and damper of a contact between a particle of the body whose entry of
// `table` is `b` and particle id `idj` of another solid: the body's, or the lower of the
// two bodies' (surge_core::bodies::pair_contact).
__device__ void pair_contact(const double *b, const double *table, int nbodies, double idj, double &kc, double &cc) {
    kc = b[7];
    cc = b[8];
    for (int o = 0; o < nbodies; ++o) {
        const double *ob = table + 8 + BODY_WORDS * o;
        if (idj >= ob[0] && idj < ob[1]) {
            kc = fmin(kc, ob[7]);
            cc = fmin(cc, ob[8]);
        }
    }
}

// The fluid's force on boundary particle i (at p4 in cell ci, velocity and density v4):
// minus the momentum terms it gives each fluid neighbour held in the window [wlo, whi),
// in stencil then storage order, as forces_kernel sums them. For a floating body's
// particle (`b` its entry of body_loads_kernel's `table`, else null) plus, summed apart and
// added last, its contacts with the boundary particles of other solids closer than dp
// (surge_core::bodies::contact_force).
__device__ float3 fluid_load(int i, float4 p4, float4 v4, int4 ci, int wlo, int whi, const float4 *pos,
                             const float4 *vel, const float4 *wall, const float4 *mdbc,
                             const unsigned *cell_start, const double *b, const double *table, int nbodies,
                             const Info *info) {
    PairParticle pb = {xyz(v4), RHO0 * (1.0f + v4.w), pressure_of(v4.w), MASS};
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
    float3 f = v3(0.0f, 0.0f, 0.0f), fc = v3(0.0f, 0.0f, 0.0f);
    const float dp = b ? (float)table[6] : 0.0f;
    const CellTable cells = cell_table(cell_start, wlo, whi);
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
                const unsigned k = cell_linear(cx, cy, cz, wlo);
                const unsigned s = cells.begin(k), mid = cells.mid(k);
                const unsigned e = b ? cells.end(k) : mid;
                const float bx = p4.x - (float)dx * CSX, by = p4.y - (float)dy * CSY, bz = p4.z - (float)dz * CSZ;
                for (unsigned j = s; j < e; ++j) {
                    const float4 pj4 = pos[j];
                    const float3 r = v3(bx - pj4.x, by - pj4.y, bz - pj4.z);
                    const float r2 = norm2(r);
                    if (j < mid) {
                        if (r2 < SUPPORT2 && r2 > 0.0f) {
                            const float4 vj4 = vel[j];
                            PairParticle pf = {xyz(vj4), RHO0 * (1.0f + vj4.w), pressure_of(vj4.w), MASS};
                            pf.inv_rho = 1.0f / pf.rho;
                            load_pair(r, r2, pb, pf, wb, mb, f);
                        }
                        continue;
                    }
                    const double idj = (double)info_id(info[j]);
                    if (r2 < dp * dp && r2 > 0.0f && !(idj >= b[0] && idj < b[1])) {
                        double kc, cc;
                        pair_contact(b, table, nbodies, idj, kc, cc);
                        const float4 vj4 = vel[j];
                        const float d = sqrtf(r2);
                        const float3 n = v3(r.x / d, r.y / d, r.z / d);
                        const float vn = (v4.x - vj4.x) * n.x + (v4.y - vj4.y) * n.y + (v4.z - vj4.z) * n.z;
                        fc = fc + n * fmaxf((float)kc * (dp - d) - (float)cc * vn, 0.0f);
                    }
                }
            }
        }
    }
    return f + fc;
}

// The fluid's force on each owned boundary particle first..first+count (storage order)
// whose id lies in one of the `nranges` ranges [ranges[2k], ranges[2k + 1]), where it is not
// zero. Each such particle takes the next entry (atomicAdd on `counter`: any order, the host
// sorts by id) of `out`, 12 words each: force xyz (float bits), id, cell offset xyz (float
// bits), 0, cell xyz, 0; at most `capacity` entries are written. Neighbours: the fluid
// particles held in the window [wlo, whi), in stencil then storage order, as forces_kernel.
extern "C" __global__ void boundary_loads_kernel(int first, int count, int wlo, int whi, int nranges,
                                                 const unsigned *ranges, const float4 *pos, const float4 *vel,
                                                 const Info *info, const float4 *wall,
                                                 const float4 *mdbc, const unsigned *cell_start, unsigned capacity, unsigned *counter,
                                                 unsigned *out) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    const int i = first + t;
    const Info in = info[i];
    if (info_kind(in) == 0u) return;
    bool wanted = false;
    for (int k = 0; k < nranges; ++k) wanted = wanted || (info_id(in) >= ranges[2 * k] && info_id(in) < ranges[2 * k + 1]);
    if (!wanted) return;
    const float4 p4 = pos[i];
    const int4 ci = cell_coords(p4.w);
    const float3 f = fluid_load(i, p4, vel[i], ci, wlo, whi, pos, vel, wall, mdbc, cell_start, nullptr, nullptr, 0, info);
    if (f.x == 0.0f && f.y == 0.0f && f.z == 0.0f) return;
    const unsigned e = atomicAdd(counter, 1u);
    if (e >= capacity) return;
    unsigned *o = out + 12 * (size_t)e;
    o[0] = __float_as_uint(f.x);
    o[1] = __float_as_uint(f.y);
    o[2] = __float_as_uint(f.z);
    o[3] = info_id(in);
    o[4] = __float_as_uint(p4.x);
    o[5] = __float_as_uint(p4.y);
    o[6] = __float_as_uint(p4.z);
    o[7] = 0u;
    o[8] = (unsigned)ci.x;
    o[9] = (unsigned)ci.y;
    o[10] = (unsigned)ci.z;
    o[11] = 0u;
}

// Floating bodies: the fixed-point sums of the load on each owned particle
// first..first+count of each body (the fluid's force, then its contacts with other solids'
// particles closer than dp) and of its moment about the body's centre (the CPU twin:
// surge-cpu's loads::boundary_loads with contacts, and surge_core::bodies::add_particle_load). `table`: the
// grid's origin xyz and cell size xyz, dp, 1 unused, then 10 per body: first id, one past
// the last, centre xyz, force step, moment step, contact spring and damper, unused. Each
// particle's contribution is rounded to an integer of its step (float64, no contraction:
// the CPU's values), the integers summed over the warp and added to `out` (6 per body)
// with one atomic each: integer sums, the same in any order.
extern "C" __global__ void body_loads_kernel(int first, int count, int wlo, int whi, int nbodies,
                                             const double *__restrict__ table, const float4 *pos, const float4 *vel,
                                             const Info *info, const float4 *wall,
                                             const float4 *mdbc, const unsigned *cell_start,
                                             unsigned long long *out) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = first + t;
    int body = -1;
    long long v[6] = {0, 0, 0, 0, 0, 0};
    if (t < count) {
        const Info in = info[i];
        for (int k = 0; k < nbodies; ++k) {
            const double *b = table + 8 + BODY_WORDS * k;
            if (info_kind(in) != 0u && (double)info_id(in) >= b[0] && (double)info_id(in) < b[1]) body = k;
        }
        if (body >= 0) {
            const float4 p4 = pos[i];
            const int4 ci = cell_coords(p4.w);
            const double *b = table + 8 + BODY_WORDS * body;
            const float3 f = fluid_load(i, p4, vel[i], ci, wlo, whi, pos, vel, wall, mdbc, cell_start, b, table, nbodies, info);
            const int c[3] = {ci.x, ci.y, ci.z};
            const float o[3] = {p4.x, p4.y, p4.z};
            double d[3];
            for (int a = 0; a < 3; ++a) {
                const double x = a < DIM ? __dadd_rn(__dadd_rn(table[a], __dmul_rn((double)c[a] + 0.5, table[3 + a])),
                                                     (double)o[a])
                                         : 0.0;
                d[a] = __dsub_rn(x, b[2 + a]);
            }
            const double fd[3] = {(double)f.x, (double)f.y, (double)f.z};
            for (int a = 0; a < 3; ++a) {
                const int a1 = (a + 1) % 3, a2 = (a + 2) % 3;
                const double m = __dsub_rn(__dmul_rn(d[a1], fd[a2]), __dmul_rn(d[a2], fd[a1]));
                v[a] = __double2ll_rn(__ddiv_rn(fd[a], b[5]));
                v[3 + a] = __double2ll_rn(__ddiv_rn(m, b[6]));
            }
        }
    }
    for (int k = 0; k < nbodies; ++k) {
        for (int a = 0; a < 6; ++a) {
            long long x = body == k ? v[a] : 0;
            for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
            if ((threadIdx.x & 31) == 0 && x != 0) atomicAdd(&out[6 * k + a], (unsigned long long)x);
        }
    }
}
