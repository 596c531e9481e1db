// Twin of crates/surge-core/src/physics/mdbc.rs: modified dynamic boundary conditions
// (English et al. 2022). A boundary particle's ghost node lies at x_b + 2 dist n; a
// first-order consistent interpolation of the fluid there (float64 solve of the (DIM+1)^2
// system) gives its relative density, extrapolated back to the particle, and the velocity
// the viscous term sees. See the Rust original for the formulas and the choices.
#pragma once
#include "vec.cuh"

// MDBC_DET_MIN (double) and MDBC_SHEPARD_MIN (float) come as -D defines from
// surge_core::physics::mdbc::{DET_MIN, SHEPARD_MIN} (crates/surge-cuda/src/compile.rs).

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
// relative density d, velocity v (GhostSums::add).
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
#pragma unroll
        for (int k = 0; k < DIM; ++k) s.a[row][1 + k] -= weight[row] * rr[k];
#pragma unroll
        for (int c = 0; c < 4; ++c) s.b[c][row] += weight[row] * q[c];
    }
}

// Gaussian elimination with partial pivoting on the first n rows and columns, four
// right-hand sides, in place; returns det A (0 on an exactly zero pivot).
__device__ __forceinline__ double mdbc_solve(double a[4][4], double b[4][4], int n) {
    double det = 1.0;
    for (int col = 0; col < n; ++col) {
        int p = col;
        for (int row = col + 1; row < n; ++row)
            if (fabs(a[row][col]) > fabs(a[p][col])) p = row;
        if (a[p][col] == 0.0) return 0.0;
        if (p != col) {
            for (int k = 0; k < 4; ++k) {
                const double t = a[p][k];
                a[p][k] = a[col][k];
                a[col][k] = t;
            }
            for (int c = 0; c < 4; ++c) {
                const double t = b[c][p];
                b[c][p] = b[c][col];
                b[c][col] = t;
            }
            det = -det;
        }
        const double piv = a[col][col];
        det *= piv;
        for (int row = col + 1; row < n; ++row) {
            const double f = a[row][col] / piv;
            for (int k = col; k < n; ++k) a[row][k] -= f * a[col][k];
            for (int c = 0; c < 4; ++c) b[c][row] -= f * b[c][col];
        }
    }
    for (int c = 0; c < 4; ++c) {
        for (int row = n - 1; row >= 0; --row) {
            double s = b[c][row];
            for (int k = row + 1; k < n; ++k) s -= a[row][k] * b[c][k];
            b[c][row] = s / a[row][row];
        }
    }
    return det;
}

// The ghost's relative density, gradient and velocity; false without fluid worth the name.
__device__ __forceinline__ bool ghost_values(const GhostSums &s, float &d, float3 &grad, float3 &vel) {
    const int n = DIM + 1;
    double a[4][4], b[4][4];
    for (int row = 0; row < 4; ++row)
        for (int k = 0; k < 4; ++k) {
            a[row][k] = (row < n && k < n) ? (double)s.a[row][k] : 0.0;
            b[row][k] = k < n ? (double)s.b[row][k] : 0.0;
        }
    const double det = mdbc_solve(a, b, n);
    if (fabs(det) >= MDBC_DET_MIN) {
        float g[3] = {0.0f, 0.0f, 0.0f};
        for (int k = 0; k < DIM; ++k) g[k] = (float)b[0][1 + k];
        d = (float)b[0][0];
        grad = v3(g[0], g[1], g[2]);
        vel = v3((float)b[1][0], (float)b[2][0], (float)b[3][0]);
        return true;
    }
    const float shepard = s.a[0][0];
    if (shepard >= MDBC_SHEPARD_MIN) {
        vel = v3(s.b[1][0], s.b[2][0], s.b[3][0]) * (1.0f / shepard);
        d = s.b[0][0] / shepard;
        grad = v3(0.0f, 0.0f, 0.0f);
        return true;
    }
    return false;
}

__device__ __forceinline__ float boundary_density(float d_ghost, float3 grad, float3 to_b) {
    return fmaxf(d_ghost + dot(grad, to_b), 0.0f);
}

__device__ __forceinline__ float3 no_slip(float3 v_wall, float3 v_ghost) { return v_wall * 2.0f - v_ghost; }

__device__ __forceinline__ float3 free_slip(float3 v_wall, float3 v_ghost, float3 n) {
    const float3 u = v_ghost - v_wall;
    return v_wall + u - n * (2.0f * dot(u, n));
}

// [velocity for the viscous term, relative density] of a boundary particle.
__device__ __forceinline__ float4 mdbc_state(const GhostSums &s, float4 wall, float3 v_wall, bool slip) {
    const float3 n = xyz(wall);
    float d;
    float3 grad, vel;
    if (ghost_values(s, d, grad, vel)) {
        const float db = boundary_density(d, grad, n * (-2.0f * wall.w));
        const float3 v = slip ? free_slip(v_wall, vel, n) : no_slip(v_wall, vel);
        return make_float4(v.x, v.y, v.z, db);
    }
    return make_float4(v_wall.x, v_wall.y, v_wall.z, 0.0f);
}
