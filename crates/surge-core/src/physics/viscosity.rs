//! Viscous terms of the momentum equation, per pair. `r = x_i - x_j`, `v = v_i - v_j`,
//! `gw = grad_i W_ij`; each returns the acceleration contribution to particle i.

use crate::V3;

/// Monaghan (1992) artificial viscosity: for approaching pairs,
/// `Pi = -alpha c_mean mu / rho_mean`, `mu = h v.r / (r² + eta²)`, contribution `-m_j Pi gw`.
#[inline(always)]
pub fn monaghan_artificial(
    alpha: f32,
    h: f32,
    c_mean: f32,
    rho_mean: f32,
    m_j: f32,
    vr: f32,
    r2: f32,
    eta2: f32,
    gw: V3,
) -> V3 {
    if vr >= 0.0 {
        return V3::ZERO;
    }
    let mu = h * vr / (r2 + eta2);
    let pi = -alpha * c_mean * mu / rho_mean;
    gw * (-m_j * pi)
}

/// Morris et al. (1997) laminar viscosity with `mu = rho nu`:
/// `m_j nu (rho_i + rho_j) / (rho_i rho_j) (r.gw) / (r² + eta²) v`.
#[inline(always)]
pub fn morris_laminar(nu: f32, rho_i: f32, rho_j: f32, m_j: f32, r: V3, r2: f32, eta2: f32, gw: V3, v: V3) -> V3 {
    let s = m_j * nu * (rho_i + rho_j) / (rho_i * rho_j) * r.dot(gw) / (r2 + eta2);
    v * s
}
