// Twin of crates/surge-core/src/physics/pair.rs: the body of the neighbour loop, with the
// artificial viscosity and the density diffusion (the twins of crates/surge-core/src/physics/
// viscosity.rs and diffusion.rs) written inline.
// Options are compile-time defines: VISC (1 artificial, 2 laminar), DIFF (0 none,
// 1 molteni_colagrossi, 2 fourtakas), SHIFT (0, 1), MDBC (0 dbc, 1 mdbc no-slip, 2 mdbc
// free slip, 3 mdbc with the wall's velocity).
#pragma once
#include "vec.cuh"
#include "kernel.cuh"
#include "viscosity.cuh"
#include "wall_function.cuh"

// The viscosity of a fluid particle's pairs with boundary particles (ALPHA or NU times
// physics.viscosity.boundary_factor; the same literal where the factor is 1, so the
// compiler folds the choice away).
#ifndef ALPHA_WALL
#define ALPHA_WALL ALPHA
#endif
#ifndef NU_WALL
#define NU_WALL NU
#endif

struct PairParticle {
    float3 vel;
    float rho;
    float p;
    float m;
    float inv_rho;  // 1 / rho: of particle i only (j's is computed in the pair)
};

struct Accum {
    float3 acc;
    float drho;
    float visc_max;
    float3 grad_c;
    float div_r;
#if WALL_FN
    WallSums wall;  // the wall function's sums (zero-initialised: aggregate initialisers omit it)
#endif
};

// The pair's formulas in as few instructions as the force kernel can issue (it is bound by
// issue, and a warp runs this body whenever one of its lanes has a neighbour within the
// support): grad W = r f, so r . grad W = r2 f and v . grad W = f (v . r); one reciprocal
// each of r2 + eta2 (viscosity, diffusion and the step's viscous bound) and of rho_j (the
// pressure term and j's volume); the artificial viscosity of receding pairs as a zero factor
// (mu clamped at 0) rather than a branch. The same formulas as the CPU's twin; the
// order of the operations, so the last bits, differ (parity within its tolerance).
__device__ __forceinline__ void fluid_pair(float3 r, float r2, const PairParticle &pi, const PairParticle &pj,
                                           bool j_fluid, float4 wall_j, float4 mdbc_j, Accum &out) {
    const float f = KERNEL_F_IN(sqrtf(r2));
    const float3 v = pi.vel - pj.vel;
    const float vr = dot(v, r);
    const float inv_r2 = 1.0f / (r2 + ETA2);
    const float inv_rhoj = 1.0f / pj.rho;
    // The momentum terms along r: -m_j (p_i + p_j) / (rho_i rho_j), then the viscosity's.
    // (-m_j / rho_i is the same for every j of i: the masses are one constant.)
    float along = (pi.p + pj.p) * ((-pj.m * pi.inv_rho) * inv_rhoj);
    // The velocity the viscous term sees: with mDBC, a boundary neighbour's no-slip or
    // free-slip velocity from its ghost node, or the wall's own (mdbc_state).
#if MDBC
    const float3 vv = j_fluid ? v : pi.vel - xyz(mdbc_j);
#else
    const float3 vv = v;
#endif
#if VISC == 1
    // Monaghan (1992): approaching pairs only (mu < 0).
    const float mu = fminf(H * (MDBC ? dot(vv, r) : vr) * inv_r2, 0.0f);
    along += pj.m * (2.0f * (j_fluid ? ALPHA : ALPHA_WALL) * C0) * mu / (pi.rho + pj.rho);
    out.acc += r * (f * along);
#else
    out.acc += r * (f * along);
#if MDBC
    out.acc += morris_laminar(j_fluid ? NU : NU_WALL, pi.rho, pj.rho, pj.m, r, r2, ETA2, r * f, vv);
#else
    if (!j_fluid) {
        float beta = morris_wall_factor(xyz(wall_j), wall_j.w, r);
        out.acc += morris_laminar(NU_WALL, pi.rho, pj.rho, pj.m, r, r2, ETA2, r * f, v * beta);
    } else {
        out.acc += morris_laminar(NU, pi.rho, pj.rho, pj.m, r, r2, ETA2, r * f, v);
    }
#endif
#endif
    // The density rate carries f in each of its terms: continuity m_j v . grad W = m_j f vr,
    // and the diffusion of Molteni and Colagrossi (2009) or Fourtakas et al. (2019), fluid
    // neighbours only, with -r . grad W / (r2 + eta2) = -r2 f / (r2 + eta2).
    float rate = pj.m * vr;
#if DIFF == 1
    const float diff = pj.rho - pi.rho;
#elif DIFF == 2
    // g . (x_j - x_i) with the zero components of g dropped at compile time (0 * r is not 0
    // to the compiler: r could be infinite).
    const float gr = -((GX != 0.0f ? GX * r.x : 0.0f) + (GY != 0.0f ? GY * r.y : 0.0f) + (GZ != 0.0f ? GZ * r.z : 0.0f));
    const float arg = 1.0f + gr * (RHO0 * INV_B);
    const float diff = (pj.rho - pi.rho) - RHO0 * (powf(fmaxf(arg, 0.0f), INV_GAMMA) - 1.0f);
#endif
#if DIFF
    rate += j_fluid ? (-2.0f * DELTA_H_C0 * pj.m) * diff * r2 * inv_r2 * inv_rhoj : 0.0f;
#endif
    out.drho += f * rate;
#if SHIFT
    const float vol_j = pj.m * inv_rhoj;
    out.grad_c += r * (f * vol_j);
    out.div_r -= vol_j * (r2 * f);
#endif
#if WALL_FN
    // The wall function's sums over boundary neighbours; j's own velocity (pj.vel: zero for
    // a wall whose velocity buffer holds its mDBC values, MDBC_IN_VEL).
    if (!j_fluid) wall_add(r, f, pj.m * inv_rhoj, wall_j, pj.vel, out.wall);
#endif
    // The step's viscous bound keeps v_i - v_j at mDBC walls too, as the CPU's twins do.
    out.visc_max = fmaxf(out.visc_max, fabsf(H * vr * inv_r2));
}

__device__ __forceinline__ void boundary_pair(float3 r, float r2, const PairParticle &pi, const PairParticle &pj,
                                              Accum &out) {
    const float f = KERNEL_F_IN(sqrtf(r2));
    out.drho += pj.m * f * dot(pi.vel - pj.vel, r);
}
