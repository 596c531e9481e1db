//! Time-step criteria (Monaghan & Kos 1999, as in DualSPHysics).

/// Force criterion `sqrt(h / |a|_max)`.
#[inline]
pub fn dt_forces(h: f64, acc_max: f64) -> f64 {
    if acc_max > 0.0 {
        (h / acc_max).sqrt()
    } else {
        f64::INFINITY
    }
}

/// Acoustic and viscous (CFL) criterion `h / (c0 + max_ij h |v_ij.r_ij| / (r² + eta²))`.
#[inline]
pub fn dt_acoustic(h: f64, c0: f64, visc_max: f64) -> f64 {
    h / (c0 + visc_max)
}

/// Laminar viscous diffusion limit `0.125 h² / nu` (Morris et al. 1997).
#[inline]
pub fn dt_viscous(h: f64, nu: f64) -> f64 {
    0.125 * h * h / nu
}
