// Twin of crates/surge-core/src/physics/wall_function.rs: the smooth-wall law of the wall
// at free-slip mDBC walls (WALL_FN 1; WALL_NU the molecular viscosity, WALL_Y_MIN the
// smallest distance to the wall). The same operations in the same order as the CPU's.
#pragma once
#include "vec.cuh"

#define WF_KAPPA 0.41f
#define WF_B 5.2f
#define WF_Y_PLUS_SUBLAYER 11.06f
#define WF_NEWTON_STEPS 6

struct WallSums {
    float s;
    float3 n;
    float y;
    float3 v;
};

__device__ __forceinline__ float friction_velocity(float u, float y, float nu) {
    if (!(u > 0.0f)) return 0.0f;
    const float laminar = sqrtf(nu * u / y);
    if (y * laminar <= WF_Y_PLUS_SUBLAYER * nu) return laminar;
    float s = u / WF_Y_PLUS_SUBLAYER;
    for (int k = 0; k < WF_NEWTON_STEPS; ++k) {
        const float lg = logf(y * s / nu) / WF_KAPPA + WF_B;
        s -= (s * lg - u) / (lg + 1.0f / WF_KAPPA);
    }
    return s;
}

__device__ __forceinline__ void wall_add(float3 r, float f, float vol_b, float4 wall_b, float3 vel_b,
                                         WallSums &out) {
    const float3 n = xyz(wall_b);
    const float rn = dot(r, n);
    const float w = -(f * rn) * vol_b;
    out.s += w;
    out.n += n * w;
    out.y += w * (rn - wall_b.w);
    out.v += vel_b * w;
}

__device__ __forceinline__ float3 wall_shear(float3 vel, const WallSums &sums, float y_min, float nu) {
    const float n2 = norm2(sums.n);
    if (!(sums.s > 0.0f && n2 > 0.0f)) return v3(0.0f, 0.0f, 0.0f);
    const float inv_s = 1.0f / sums.s;
    const float3 n = sums.n * (1.0f / sqrtf(n2));
    const float3 u = vel - sums.v * inv_s;
    const float3 ut = u - n * dot(u, n);
    const float speed = sqrtf(norm2(ut));
    if (!(speed > 0.0f)) return v3(0.0f, 0.0f, 0.0f);
    const float y = fmaxf(sums.y * inv_s, y_min);
    const float us = friction_velocity(speed, y, nu);
    return ut * (-2.0f * sums.s * us * us / speed);
}
