// Twin of crates/surge-core/src/physics/viscosity.rs (the laminar model; the artificial
// viscosity is written into fluid_pair, pair.cuh). r = x_i - x_j, v = v_i - v_j.
#pragma once
#include "vec.cuh"

__device__ __forceinline__ float3 morris_laminar(float nu, float rho_i, float rho_j, float m_j, float3 r, float r2,
                                                 float eta2, float3 gw, float3 v) {
    float s = m_j * nu * (rho_i + rho_j) / (rho_i * rho_j) * dot(r, gw) / (r2 + eta2);
    return v * s;
}

#define MORRIS_BETA_MAX 3.0f

__device__ __forceinline__ float morris_wall_factor(float3 n_j, float d_j, float3 r) {
    float d_i = dot(n_j, r) - d_j;
    return d_i > 0.0f ? fminf(1.0f + d_j / d_i, MORRIS_BETA_MAX) : MORRIS_BETA_MAX;
}
