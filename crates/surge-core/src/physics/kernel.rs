//! Smoothing kernels with support radius 2h. `w` is the kernel value; `f` is the gradient
//! factor such that `grad_i W(r_ij) = f(|r_ij|) * r_ij` with `r_ij = x_i - x_j` (f <= 0).

use std::f64::consts::PI;

/// A smoothing kernel with its constants for one h and dimension.
pub trait SmoothingKernel: Copy + Send + Sync + 'static {
    /// Name used in logs and NVRTC defines.
    const NAME: &'static str;
    /// Constants for smoothing length `h` in `dim` dimensions.
    fn new(h: f64, dim: usize) -> Self;
    /// W(r).
    fn w(&self, r: f32) -> f32;
    /// Gradient factor: grad W = f(r) * r_vec.
    fn f(&self, r: f32) -> f32;
    /// The float32 constants `[1/h, a_w, a_f]` (inlined into the CUDA twin).
    fn constants(&self) -> [f32; 3];
}

/// Wendland C2: `W = a (1 - q/2)^4 (2q + 1)`, `a = 7/(4 pi h²)` in 2D, `21/(16 pi h³)` in 3D.
#[derive(Debug, Clone, Copy)]
pub struct WendlandC2 {
    inv_h: f32,
    a_w: f32,
    /// `-5 a / h²`: f(r) = a_f (1 - q/2)^3.
    a_f: f32,
}

impl SmoothingKernel for WendlandC2 {
    const NAME: &'static str = "wendland_c2";
    fn new(h: f64, dim: usize) -> Self {
        let a = if dim == 2 { 7.0 / (4.0 * PI * h * h) } else { 21.0 / (16.0 * PI * h * h * h) };
        Self { inv_h: (1.0 / h) as f32, a_w: a as f32, a_f: (-5.0 * a / (h * h)) as f32 }
    }
    #[inline(always)]
    fn w(&self, r: f32) -> f32 {
        wendland_c2_w(r * self.inv_h, self.a_w)
    }
    #[inline(always)]
    fn f(&self, r: f32) -> f32 {
        wendland_c2_f(r * self.inv_h, self.a_f)
    }
    fn constants(&self) -> [f32; 3] {
        [self.inv_h, self.a_w, self.a_f]
    }
}

/// Wendland C2 value at q = r/h (0 beyond q = 2).
#[inline(always)]
pub fn wendland_c2_w(q: f32, a_w: f32) -> f32 {
    if q >= 2.0 {
        return 0.0;
    }
    let t = 1.0 - 0.5 * q;
    let t2 = t * t;
    a_w * t2 * t2 * (2.0 * q + 1.0)
}

/// Wendland C2 gradient factor at q = r/h: `a_f (1 - q/2)^3` with `a_f = -5 a / h²`.
#[inline(always)]
pub fn wendland_c2_f(q: f32, a_f: f32) -> f32 {
    if q >= 2.0 {
        return 0.0;
    }
    let t = 1.0 - 0.5 * q;
    a_f * t * t * t
}

/// Cubic B-spline: `a (1 - 1.5q² + 0.75q³)` for q < 1, `a/4 (2 - q)³` for q < 2,
/// `a = 10/(7 pi h²)` in 2D, `1/(pi h³)` in 3D.
#[derive(Debug, Clone, Copy)]
pub struct CubicSpline {
    inv_h: f32,
    a_w: f32,
    /// `a / h²`: f(r) = a_f (-3 + 2.25 q) for q < 1, `-0.75 a_f (2-q)²/q` for q < 2.
    a_f: f32,
}

impl SmoothingKernel for CubicSpline {
    const NAME: &'static str = "cubic_spline";
    fn new(h: f64, dim: usize) -> Self {
        let a = if dim == 2 { 10.0 / (7.0 * PI * h * h) } else { 1.0 / (PI * h * h * h) };
        Self { inv_h: (1.0 / h) as f32, a_w: a as f32, a_f: (a / (h * h)) as f32 }
    }
    #[inline(always)]
    fn w(&self, r: f32) -> f32 {
        cubic_spline_w(r * self.inv_h, self.a_w)
    }
    #[inline(always)]
    fn f(&self, r: f32) -> f32 {
        cubic_spline_f(r * self.inv_h, self.a_f)
    }
    fn constants(&self) -> [f32; 3] {
        [self.inv_h, self.a_w, self.a_f]
    }
}

/// Cubic spline value at q = r/h.
#[inline(always)]
pub fn cubic_spline_w(q: f32, a_w: f32) -> f32 {
    if q < 1.0 {
        a_w * (1.0 - 1.5 * q * q + 0.75 * q * q * q)
    } else if q < 2.0 {
        let t = 2.0 - q;
        a_w * 0.25 * t * t * t
    } else {
        0.0
    }
}

/// Cubic spline gradient factor at q = r/h with `a_f = a / h²` (dW/dr / r).
#[inline(always)]
pub fn cubic_spline_f(q: f32, a_f: f32) -> f32 {
    if q < 1.0 {
        a_f * (-3.0 + 2.25 * q)
    } else if q < 2.0 {
        let t = 2.0 - q;
        -0.75 * a_f * t * t / q
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Integral of W over the plane (2D) or space (3D) by the midpoint rule on a fine grid.
    fn integral<K: SmoothingKernel>(dim: usize) -> f64 {
        let h = 0.1;
        let k = K::new(h, dim);
        let n = if dim == 2 { 400 } else { 120 };
        let step = 4.0 * h / n as f64;
        let c = |i: usize| -2.0 * h + (i as f64 + 0.5) * step;
        let mut s = 0.0;
        for i in 0..n {
            for j in 0..n {
                if dim == 2 {
                    s += k.w((c(i).powi(2) + c(j).powi(2)).sqrt() as f32) as f64;
                } else {
                    for l in 0..n {
                        s += k.w((c(i).powi(2) + c(j).powi(2) + c(l).powi(2)).sqrt() as f32) as f64;
                    }
                }
            }
        }
        s * step.powi(dim as i32)
    }

    #[test]
    fn kernels_are_normalised() {
        // Midpoint quadrature of a C2 function with 200+ points per support: error < 1e-4.
        for dim in [2, 3] {
            let tol = 1e-4;
            let w = integral::<WendlandC2>(dim);
            assert!((w - 1.0).abs() < tol, "Wendland C2 {dim}D integrates to {w}");
            let c = integral::<CubicSpline>(dim);
            assert!((c - 1.0).abs() < tol, "cubic spline {dim}D integrates to {c}");
        }
    }

    /// The gradient factor is dW/dr / r: check against a central difference of W.
    fn gradient_matches_derivative<K: SmoothingKernel>(dim: usize) {
        let h = 0.05;
        let k = K::new(h, dim);
        for i in 1..40 {
            let r = (i as f64) * 2.0 * h / 40.0;
            let eps = 1e-4 * h;
            let dw = (k.w((r + eps) as f32) as f64 - k.w((r - eps) as f32) as f64) / (2.0 * eps);
            let f = k.f(r as f32) as f64 * r;
            let scale = (k.w(0.0) as f64) / h;
            assert!((dw - f).abs() < 2e-3 * scale, "{} {dim}D r={r}: dW/dr={dw}, f*r={f}", K::NAME);
        }
    }

    #[test]
    fn gradients_match_the_kernel_and_are_antisymmetric() {
        for dim in [2, 3] {
            gradient_matches_derivative::<WendlandC2>(dim);
            gradient_matches_derivative::<CubicSpline>(dim);
            // grad_i W(x_i - x_j) = -grad_j W(x_j - x_i): f depends on |r| only.
            let k = WendlandC2::new(0.1, dim);
            let r = crate::V3::new(0.03, -0.05, if dim == 3 { 0.02 } else { 0.0 });
            let gi = r * k.f(r.norm2().sqrt());
            let gj = (-r) * k.f((-r).norm2().sqrt());
            assert_eq!(gi, -gj);
        }
    }

    #[test]
    fn kernels_vanish_at_and_beyond_support() {
        for dim in [2, 3] {
            let w = WendlandC2::new(1.0, dim);
            let c = CubicSpline::new(1.0, dim);
            for r in [2.0f32, 2.5, 10.0] {
                assert_eq!((w.w(r), w.f(r), c.w(r), c.f(r)), (0.0, 0.0, 0.0, 0.0));
            }
        }
    }
}
