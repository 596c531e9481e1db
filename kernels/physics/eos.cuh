// Twin of crates/surge-core/src/physics/eos.rs: Tait over the relative density d.
#pragma once

__device__ __forceinline__ float tait_pressure(float d, float b, float gamma, float p_b) {
#if GAMMA_IS_7
    // (1 + d)^7 by multiplication: the same value as powf to a few ulp, far cheaper, and
    // evaluated for every neighbour.
    float x = 1.0f + d, x2 = x * x, x4 = x2 * x2;
    const float p = b * (x4 * x2 * x - 1.0f);
#else
    const float p = b * (powf(1.0f + d, gamma) - 1.0f);
#endif
    // Without a background pressure, no "+ 0" (which the compiler must keep: -0 + 0 is +0), so
    // a pair's p_i + p_j is one fused multiply-add.
    return p_b == 0.0f ? p : p + p_b;
}

__device__ __forceinline__ float tait_density(float p, float b, float gamma, float p_b) {
    return powf((p - p_b) / b + 1.0f, 1.0f / gamma) - 1.0f;
}
