// Twin of crates/surge-core/src/physics/kernel.rs: smoothing kernels with support 2h.
// w is the kernel value at q = r/h, f the gradient factor (grad W = f * r_vec).
#pragma once

__device__ __forceinline__ float wendland_c2_w(float q, float a_w) {
    if (q >= 2.0f) return 0.0f;
    float t = 1.0f - 0.5f * q;
    float t2 = t * t;
    return a_w * t2 * t2 * (2.0f * q + 1.0f);
}

__device__ __forceinline__ float wendland_c2_f(float q, float a_f) {
    if (q >= 2.0f) return 0.0f;
    float t = 1.0f - 0.5f * q;
    return a_f * t * t * t;
}

__device__ __forceinline__ float cubic_spline_w(float q, float a_w) {
    if (q < 1.0f) return a_w * (1.0f - 1.5f * q * q + 0.75f * q * q * q);
    if (q < 2.0f) {
        float t = 2.0f - q;
        return a_w * 0.25f * t * t * t;
    }
    return 0.0f;
}

__device__ __forceinline__ float cubic_spline_f(float q, float a_f) {
    if (q < 1.0f) return a_f * (-3.0f + 2.25f * q);
    if (q < 2.0f) {
        float t = 2.0f - q;
        return -0.75f * a_f * t * t / q;
    }
    return 0.0f;
}

// The gradient factor where the caller has tested r < 2h (the pair body): no test of its own,
// and r rather than q (one multiplication fewer).
// Where r rounds to 2h or just past it, t is 0 or a few ulp below it, so f is 0 or a few
// ulp of a_f below, against the tested form's 0.
__device__ __forceinline__ float wendland_c2_f_in(float r, float minus_half_inv_h, float a_f) {
    float t = fmaf(r, minus_half_inv_h, 1.0f);  // 1 - q/2, q = r/h
    return a_f * t * t * t;
}

#if KERNEL == 1
#define KERNEL_W(r) wendland_c2_w((r) * INV_H, A_W)
#define KERNEL_F(r) wendland_c2_f((r) * INV_H, A_F)
#define KERNEL_F_IN(r) wendland_c2_f_in((r), -0.5f * INV_H, A_F)
#elif KERNEL == 2
#define KERNEL_W(r) cubic_spline_w((r) * INV_H, A_W)
#define KERNEL_F(r) cubic_spline_f((r) * INV_H, A_F)
#define KERNEL_F_IN(r) cubic_spline_f((r) * INV_H, A_F)
#else
#error "KERNEL must be 1 (wendland_c2) or 2 (cubic_spline)"
#endif
