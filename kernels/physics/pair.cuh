// Twin of crates/surge-core/src/physics/pair.rs: the body of the neighbour loop.
// Options are compile-time defines: VISC (1 artificial, 2 laminar), DIFF (0 none,
// 1 molteni_colagrossi, 2 fourtakas), SHIFT (0, 1), MDBC (0 dbc, 1 mdbc no-slip, 2 mdbc
// free slip).
#pragma once
#include "vec.cuh"
#include "kernel.cuh"
#include "viscosity.cuh"
#include "diffusion.cuh"

struct PairParticle {
    float3 vel;
    float rho;
    float p;
    float m;
};

struct Accum {
    float3 acc;
    float drho;
    float visc_max;
    float3 grad_c;
    float div_r;
};

__device__ __forceinline__ void fluid_pair(float3 r, float r2, const PairParticle &pi, const PairParticle &pj,
                                           bool j_fluid, float4 wall_j, float4 mdbc_j, Accum &out) {
    float3 gw = r * KERNEL_F(sqrtf(r2));
    float3 v = pi.vel - pj.vel;
    float vr = dot(v, r);
    float p_term = (pi.p + pj.p) / (pi.rho * pj.rho);
    out.acc -= gw * (pj.m * p_term);
#if MDBC
    // A boundary neighbour's no-slip or free-slip velocity from its ghost node, for
    // viscosity only.
    const float3 vv = j_fluid ? v : pi.vel - xyz(mdbc_j);
#if VISC == 1
    out.acc += monaghan_artificial(ALPHA, H, C0, 0.5f * (pi.rho + pj.rho), pj.m, dot(vv, r), r2, ETA2, gw);
#else
    out.acc += morris_laminar(NU, pi.rho, pj.rho, pj.m, r, r2, ETA2, gw, vv);
#endif
#elif VISC == 1
    out.acc += monaghan_artificial(ALPHA, H, C0, 0.5f * (pi.rho + pj.rho), pj.m, vr, r2, ETA2, gw);
#else
    if (!j_fluid) {
        float beta = morris_wall_factor(xyz(wall_j), wall_j.w, r);
        out.acc += morris_laminar(NU, pi.rho, pj.rho, pj.m, r, r2, ETA2, gw, v * beta);
    } else {
        out.acc += morris_laminar(NU, pi.rho, pj.rho, pj.m, r, r2, ETA2, gw, v);
    }
#endif
    out.drho += pj.m * dot(v, gw);
#if DIFF == 1
    if (j_fluid) out.drho += molteni_colagrossi(DELTA_H_C0, pi.rho, pj.rho, r, r2, ETA2, gw, pj.m / pj.rho);
#elif DIFF == 2
    if (j_fluid)
        out.drho += fourtakas(DELTA_H_C0, pi.rho, pj.rho, r, r2, ETA2, gw, pj.m / pj.rho, RHO0, v3(GX, GY, GZ), INV_B,
                              INV_GAMMA);
#endif
#if SHIFT
    float vol = pj.m / pj.rho;
    out.grad_c += gw * vol;
    out.div_r -= vol * dot(r, gw);
#endif
    out.visc_max = fmaxf(out.visc_max, fabsf(H * vr / (r2 + ETA2)));
}

__device__ __forceinline__ void boundary_pair(float3 r, float r2, const PairParticle &pi, const PairParticle &pj,
                                              Accum &out) {
    float3 gw = r * KERNEL_F(sqrtf(r2));
    float3 v = pi.vel - pj.vel;
    out.drho += pj.m * dot(v, gw);
}
