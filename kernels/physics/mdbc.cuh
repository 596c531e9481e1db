// Twin of crates/surge-core/src/physics/mdbc.rs: modified dynamic boundary conditions
// (English et al. 2022). A boundary particle's ghost node lies at x_b + 2 dist n; a
// first-order consistent interpolation of the fluid there (float64 solve of the (DIM+1)^2
// system by its adjugate) gives its relative density, extrapolated back to the particle; the
// ghost's Shepard velocity gives the velocity the viscous term sees (open boundaries take it
// to first order). See the Rust original for the formulas and the choices.
#pragma once
#include "vec.cuh"

// MDBC_DET_MIN (double) and MDBC_SHEPARD_MIN (float) come as -D defines from
// surge_core::physics::mdbc::{DET_MIN, SHEPARD_MIN} (crates/surge-cuda/src/compile.rs).

// A's block of rows and columns 1.. is symmetric: only its upper triangle is summed
// (twin of surge_core::physics::mdbc::GhostSums).
struct GhostSums {
    float a[4][4];
    float b[4][4];  // b[0] relative density, b[1..3] velocity x, y, z
};

// The ghost node's offset from the particle's cell centre; false when the particle lies
// `support` or deeper (not updated).
__device__ __forceinline__ bool ghost_offset(float3 off, float4 wall, float support, float3 &out) {
    const float dist = wall.w;
    if (dist >= support || !(dist > 0.0f)) return false;
    out = off + xyz(wall) * (2.0f * dist);
    return true;
}

// Fluid neighbour at r = x_g - x_f: kernel value w, gradient at the ghost gw, volume vol,
// relative density d, velocity v; the velocity's gradient rows only with VEL_FIRST (open
// boundaries; GhostSums::add).
template <bool VEL_FIRST>
__device__ __forceinline__ void ghost_add(GhostSums &s, float3 r, float w, float3 gw, float vol, float d, float3 v) {
    const float rr[3] = {r.x, r.y, r.z};
    const float g[3] = {gw.x, gw.y, gw.z};
    float weight[4] = {vol * w, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int k = 0; k < DIM; ++k) weight[1 + k] = vol * g[k];
    const float q[4] = {d, v.x, v.y, v.z};
#pragma unroll
    for (int row = 0; row <= DIM; ++row) {
        s.a[row][0] += weight[row];
        // Row 0 whole; rows 1.. from their diagonal on (the block is symmetric).
#pragma unroll
        for (int k = row > 0 ? row - 1 : 0; k < DIM; ++k) s.a[row][1 + k] -= weight[row] * rr[k];
#pragma unroll
        for (int c = 0; c < 4; ++c)
            if (row == 0 || c == 0 || VEL_FIRST) s.b[c][row] += weight[row] * q[c];
    }
}

// det A and adj A (A^-1 = adj A / det A) of the first DIM + 1 rows and columns, float64, by
// cofactors written out (twin of surge_core::physics::mdbc::adjugate): no pivoting and every
// index a constant, so nothing goes to local memory.
__device__ __forceinline__ double adjugate(const double a[4][4], double adj[4][4]) {
#if DIM == 2
#define MDBC_C(r0, r1, c0, c1) (a[r0][c0] * a[r1][c1] - a[r0][c1] * a[r1][c0])
    adj[0][0] = MDBC_C(1, 2, 1, 2);
    adj[0][1] = -MDBC_C(0, 2, 1, 2);
    adj[0][2] = MDBC_C(0, 1, 1, 2);
    adj[1][0] = -MDBC_C(1, 2, 0, 2);
    adj[1][1] = MDBC_C(0, 2, 0, 2);
    adj[1][2] = -MDBC_C(0, 1, 0, 2);
    adj[2][0] = MDBC_C(1, 2, 0, 1);
    adj[2][1] = -MDBC_C(0, 2, 0, 1);
    adj[2][2] = MDBC_C(0, 1, 0, 1);
#undef MDBC_C
    return a[0][0] * adj[0][0] + a[0][1] * adj[1][0] + a[0][2] * adj[2][0];
#else
#define MDBC_M(r, c0, c1) (a[r][c0] * a[r + 1][c1] - a[r][c1] * a[r + 1][c0])
    const double s0 = MDBC_M(0, 0, 1), s1 = MDBC_M(0, 0, 2), s2 = MDBC_M(0, 0, 3), s3 = MDBC_M(0, 1, 2),
                 s4 = MDBC_M(0, 1, 3), s5 = MDBC_M(0, 2, 3);
    const double c0 = MDBC_M(2, 0, 1), c1 = MDBC_M(2, 0, 2), c2 = MDBC_M(2, 0, 3), c3 = MDBC_M(2, 1, 2),
                 c4 = MDBC_M(2, 1, 3), c5 = MDBC_M(2, 2, 3);
#undef MDBC_M
    adj[0][0] = a[1][1] * c5 - a[1][2] * c4 + a[1][3] * c3;
    adj[0][1] = -a[0][1] * c5 + a[0][2] * c4 - a[0][3] * c3;
    adj[0][2] = a[3][1] * s5 - a[3][2] * s4 + a[3][3] * s3;
    adj[0][3] = -a[2][1] * s5 + a[2][2] * s4 - a[2][3] * s3;
    adj[1][0] = -a[1][0] * c5 + a[1][2] * c2 - a[1][3] * c1;
    adj[1][1] = a[0][0] * c5 - a[0][2] * c2 + a[0][3] * c1;
    adj[1][2] = -a[3][0] * s5 + a[3][2] * s2 - a[3][3] * s1;
    adj[1][3] = a[2][0] * s5 - a[2][2] * s2 + a[2][3] * s1;
    adj[2][0] = a[1][0] * c4 - a[1][1] * c2 + a[1][3] * c0;
    adj[2][1] = -a[0][0] * c4 + a[0][1] * c2 - a[0][3] * c0;
    adj[2][2] = a[3][0] * s4 - a[3][1] * s2 + a[3][3] * s0;
    adj[2][3] = -a[2][0] * s4 + a[2][1] * s2 - a[2][3] * s0;
    adj[3][0] = -a[1][0] * c3 + a[1][1] * c1 - a[1][2] * c0;
    adj[3][1] = a[0][0] * c3 - a[0][1] * c1 + a[0][2] * c0;
    adj[3][2] = -a[3][0] * s3 + a[3][1] * s1 - a[3][2] * s0;
    adj[3][3] = a[2][0] * s3 - a[2][1] * s1 + a[2][2] * s0;
    return s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0;
#endif
}

// The ghost's Shepard velocity sum V v W / sum V W.
__device__ __forceinline__ float3 shepard_velocity(const GhostSums &s) {
    return v3(s.b[1][0], s.b[2][0], s.b[3][0]) * (1.0f / s.a[0][0]);
}

// The ghost's relative density, gradient and velocity; false without fluid worth the name.
// First order: all of A^-1 b_0 (density, gradient), and with `vel_first_order` (open
// boundaries; GhostVelocity::FirstOrder, sums added with VEL_FIRST) the first entry of
// A^-1 b_c for the velocity components, else (mDBC walls; GhostVelocity::Shepard) their
// Shepard values.
__device__ __forceinline__ bool ghost_values(const GhostSums &s, bool vel_first_order, float &d, float3 &grad,
                                             float3 &vel) {
    const int n = DIM + 1;
    double a[4][4], adj[4][4];
#pragma unroll
    for (int row = 0; row < 4; ++row)
#pragma unroll
        for (int k = 0; k < 4; ++k)
            // The symmetric block's lower triangle is its upper one (GhostSums).
            a[row][k] = (row < n && k < n) ? (double)(row > k && k > 0 ? s.a[k][row] : s.a[row][k]) : 0.0;
    const double det = adjugate(a, adj);
    if (fabs(det) >= MDBC_DET_MIN) {
        const double inv = 1.0 / det;
        float x[4][4];  // x[q][row]: row `row` of A^-1 times right-hand side q
#pragma unroll
        for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int row = 0; row < 4; ++row) {
                double acc = 0.0;
#pragma unroll
                for (int k = 0; k < n; ++k) acc += adj[row][k] * (double)s.b[q][k];
                x[q][row] = (float)(acc * inv);
            }
        float g[3] = {0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int k = 0; k < DIM; ++k) g[k] = x[0][1 + k];
        d = x[0][0];
        grad = v3(g[0], g[1], g[2]);
        vel = vel_first_order ? v3(x[1][0], x[2][0], x[3][0]) : shepard_velocity(s);
        return true;
    }
    const float shepard = s.a[0][0];
    if (shepard >= MDBC_SHEPARD_MIN) {
        vel = shepard_velocity(s);
        d = s.b[0][0] / shepard;
        grad = v3(0.0f, 0.0f, 0.0f);
        return true;
    }
    return false;
}

__device__ __forceinline__ float boundary_density(float d_ghost, float3 grad, float3 to_b) {
    return fmaxf(__fadd_rn(d_ghost, dot_rn(grad, to_b)), 0.0f);
}

__device__ __forceinline__ float3 no_slip(float3 v_wall, float3 v_ghost) { return v_wall * 2.0f - v_ghost; }

__device__ __forceinline__ float3 free_slip(float3 v_wall, float3 v_ghost, float3 n) {
    const float3 u = v_ghost - v_wall;
    return v_wall + u - n * (2.0f * dot_rn(u, n));
}

// [velocity for the viscous term, relative density] of a boundary particle.
// slip: 0 no-slip, 1 free slip, 2 the wall's own velocity (surge_core::case::Slip).
__device__ __forceinline__ float4 mdbc_state(const GhostSums &s, float4 wall, float3 v_wall, int slip) {
    const float3 n = xyz(wall);
    float d;
    float3 grad, vel;
    if (ghost_values(s, false, d, grad, vel)) {
        const float db = boundary_density(d, grad, n * (-2.0f * wall.w));
        const float3 v = slip == 1 ? free_slip(v_wall, vel, n) : slip == 0 ? no_slip(v_wall, vel) : v_wall;
        return make_float4(v.x, v.y, v.z, db);
    }
    return make_float4(v_wall.x, v_wall.y, v_wall.z, 0.0f);
}
