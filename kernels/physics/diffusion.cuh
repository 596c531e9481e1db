// Twin of crates/surge-core/src/physics/diffusion.rs: delta-SPH terms, as physical
// density rates. r = x_i - x_j, gw = grad_i W, vol_j = m_j / rho_j.
#pragma once
#include "vec.cuh"

__device__ __forceinline__ float molteni_colagrossi(float delta_h_c0, float rho_i, float rho_j, float3 r, float r2,
                                                    float eta2, float3 gw, float vol_j) {
    return delta_h_c0 * 2.0f * (rho_j - rho_i) * dot(-r, gw) / (r2 + eta2) * vol_j;
}

__device__ __forceinline__ float fourtakas(float delta_h_c0, float rho_i, float rho_j, float3 r, float r2, float eta2,
                                           float3 gw, float vol_j, float rho0, float3 g, float inv_b, float inv_gamma) {
    float arg = 1.0f + rho0 * dot(g, -r) * inv_b;
    float rho_h = rho0 * (powf(fmaxf(arg, 0.0f), inv_gamma) - 1.0f);
    return delta_h_c0 * 2.0f * ((rho_j - rho_i) - rho_h) * dot(-r, gw) / (r2 + eta2) * vol_j;
}
