//! Density diffusion (delta-SPH) terms of the continuity equation, per fluid pair, as a
//! rate of the physical density. `r = x_i - x_j`, `gw = grad_i W_ij`, `vol_j = m_j / rho_j`.

use crate::V3;

/// Molteni & Colagrossi (2009): `delta h c0 2 (rho_j - rho_i) (x_j - x_i).gw / r² vol_j`.
#[inline(always)]
pub fn molteni_colagrossi(
    delta_h_c0: f32,
    rho_i: f32,
    rho_j: f32,
    r: V3,
    r2: f32,
    eta2: f32,
    gw: V3,
    vol_j: f32,
) -> f32 {
    delta_h_c0 * 2.0 * (rho_j - rho_i) * (-r).dot(gw) / (r2 + eta2) * vol_j
}

/// Fourtakas et al. (2019): as Molteni–Colagrossi with the hydrostatic density difference
/// removed, `rho_ji^H = rho0 ((1 + rho0 g.(x_j - x_i) / B)^(1/gamma) - 1)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn fourtakas(
    delta_h_c0: f32,
    rho_i: f32,
    rho_j: f32,
    r: V3,
    r2: f32,
    eta2: f32,
    gw: V3,
    vol_j: f32,
    rho0: f32,
    g: V3,
    inv_b: f32,
    inv_gamma: f32,
) -> f32 {
    let arg = 1.0 + rho0 * g.dot(-r) * inv_b;
    let rho_h = rho0 * (arg.max(0.0).powf(inv_gamma) - 1.0);
    delta_h_c0 * 2.0 * ((rho_j - rho_i) - rho_h) * (-r).dot(gw) / (r2 + eta2) * vol_j
}
