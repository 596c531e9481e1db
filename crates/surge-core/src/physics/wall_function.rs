//! A wall function at free-slip mDBC walls (`physics.wall_function = { kind = "log_law" }`):
//! the shear of the turbulent boundary layer that a free-slip wall leaves out and that
//! particles a few millimetres apart cannot resolve (at dp 6 mm a dam-break front's first
//! row lies at y+ of several hundred, in the log layer), as finite-volume codes put it on
//! their first cell (Launder & Spalding 1974).
//!
//! For a fluid particle i near walls the force pass sums, over its boundary neighbours b
//! (inward unit normal `n_b`, distance `dist_b` inside the wall, volume `V_b`, with
//! `r = x_i - x_b` and `grad W = r F`), the weight `w_b = -V_b F (r . n_b)`, so
//!
//! ```text
//! S = sum w_b,  N = sum w_b n_b,  Y = sum w_b (r . n_b - dist_b),  U = sum w_b v_b.
//! ```
//!
//! `S` is the SPH estimate of `sum_b V_b grad_b W . n`, which over a plane wall filled with
//! boundary particles is the kernel's integral over the wall's surface, `Gamma(d)` at the
//! particle's distance d (the divergence theorem: `int_{wall} dW/dz' = int_{surface} W`); a
//! column of fluid particles of volume V above a unit of wall has `sum V Gamma = 1/2`. So the
//! acceleration `a_i = -2 S tau_w / rho` of every particle gives the wall's shear `tau_w`
//! per unit area, spread over the support as the kernel spreads a surface. The particle's
//! wall normal is `N / |N|`, its distance `y = Y / S`, the wall's velocity `U / S`; the slip
//! `u_t` is the tangential part of `v_i - U / S`, and `tau_w = rho u*²` in the direction of
//! `u_t`, with the friction velocity u* of the smooth-wall law at (|u_t|, y):
//!
//! ```text
//! u+ = y+                          (y+ <= 11.06, the viscous sublayer)
//! u+ = ln(y+) / kappa + B          (kappa 0.41, B 5.2; above)
//! ```
//!
//! where `u+ = |u_t| / u*` and `y+ = y u* / nu`. The log branch is solved by Newton's method
//! from `u* = |u_t| / 11.06`, above the root (the residual is convex and increasing in u*),
//! a fixed number of steps so that the CUDA twin does the same operations.
//!
//! Each function has a CUDA twin of the same name and argument order in
//! `kernels/physics/wall_function.cuh`.

use crate::V3;

/// von Kármán's constant.
pub const KAPPA: f32 = 0.41;
/// The smooth wall's log-law intercept.
pub const B: f32 = 5.2;
/// y+ where the viscous sublayer's `u+ = y+` meets the log law (`y+ = ln(y+) / 0.41 + 5.2`).
pub const Y_PLUS_SUBLAYER: f32 = 11.06;
/// Newton steps on the log law: from u+ = 11.06 they reach float precision by the fifth
/// for y+ up to 1e6 (test `friction_velocity_solves_the_law`).
pub const NEWTON_STEPS: u32 = 6;

/// The friction velocity u* of the smooth-wall law for slip speed `u` at distance `y` from
/// the wall, molecular viscosity `nu`. 0 for `u <= 0`.
#[inline]
pub fn friction_velocity(u: f32, y: f32, nu: f32) -> f32 {
    if !(u > 0.0) {
        return 0.0;
    }
    let laminar = (nu * u / y).sqrt();
    if y * laminar <= Y_PLUS_SUBLAYER * nu {
        return laminar;
    }
    let mut s = u / Y_PLUS_SUBLAYER;
    for _ in 0..NEWTON_STEPS {
        let log = (y * s / nu).ln() / KAPPA + B;
        s -= (s * log - u) / (log + 1.0 / KAPPA);
    }
    s
}

/// The law's velocity at distance `y` from the wall for friction velocity `u_star`, the
/// inverse of [`friction_velocity`] (`initial_velocity = { kind = "log_law" }`).
pub fn law_velocity(u_star: f64, y: f64, nu: f64) -> f64 {
    let y_plus = y * u_star / nu;
    let u_plus = if y_plus <= Y_PLUS_SUBLAYER as f64 { y_plus } else { y_plus.ln() / KAPPA as f64 + B as f64 };
    u_star * u_plus
}

/// The wall sums of fluid particle i ([`crate::physics::pair::Accum`]): `s`, `n`, `y` and
/// `v` are S, N, Y and U of the module's doc.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WallSums {
    /// S.
    pub s: f32,
    /// N.
    pub n: V3,
    /// Y.
    pub y: f32,
    /// U.
    pub v: V3,
}

/// Boundary neighbour b's part of fluid particle i's wall sums: `r = x_i - x_b`, `f` the
/// kernel's `F(|r|)` (grad W = r F), `vol_b` its volume, `wall_b` its normal and distance
/// (the `Wall` buffer), `vel_b` its own velocity.
#[inline(always)]
pub fn wall_add(r: V3, f: f32, vol_b: f32, wall_b: [f32; 4], vel_b: V3, out: &mut WallSums) {
    let n = V3::from4(wall_b);
    let rn = r.dot(n);
    let w = -(f * rn) * vol_b;
    out.s += w;
    out.n += n * w;
    out.y += w * (rn - wall_b[3]);
    out.v += vel_b * w;
}

/// The wall's shear as an acceleration of fluid particle i (velocity `vel`) from its wall
/// sums; `y_min` bounds the distance from below (a particle at the wall's surface), `nu` the
/// molecular viscosity. Zero away from walls and without slip.
#[inline]
pub fn wall_shear(vel: V3, sums: &WallSums, y_min: f32, nu: f32) -> V3 {
    let n2 = sums.n.norm2();
    if !(sums.s > 0.0 && n2 > 0.0) {
        return V3::ZERO;
    }
    let inv_s = 1.0 / sums.s;
    let n = sums.n * (1.0 / n2.sqrt());
    let u = vel - sums.v * inv_s;
    let ut = u - n * u.dot(n);
    let speed = ut.norm2().sqrt();
    if !(speed > 0.0) {
        return V3::ZERO;
    }
    let y = (sums.y * inv_s).max(y_min);
    let us = friction_velocity(speed, y, nu);
    // -2 S u*² along u_t / |u_t|.
    ut * (-2.0 * sums.s * us * us / speed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The law's residual at the returned u*, in float64, for speeds and distances from the
    /// viscous sublayer to y+ of 1e5.
    #[test]
    fn friction_velocity_solves_the_law() {
        let nu = 1.0e-6_f32;
        for &u in &[1e-4_f32, 0.01, 0.3, 1.0, 4.0, 10.0] {
            for &y in &[1e-4_f32, 1e-3, 3e-3, 0.01, 0.1] {
                let s = friction_velocity(u, y, nu) as f64;
                let (u, y, nu) = (u as f64, y as f64, nu as f64);
                let yp = y * s / nu;
                let up = u / s;
                let law = if yp <= Y_PLUS_SUBLAYER as f64 { yp } else { yp.ln() / KAPPA as f64 + B as f64 };
                // Float32 work: the residual of u+ within 1e-5 relative (a few ulps of ln).
                assert!((up - law).abs() <= 1e-5 * law.max(1.0), "u {u} y {y}: u+ {up} against {law}");
            }
        }
        assert_eq!(friction_velocity(0.0, 1e-3, 1e-6), 0.0);
    }

    /// `law_velocity` inverts `friction_velocity` on both branches, within 1e-5 relative
    /// (float32's precision of the Newton solve, as above).
    #[test]
    fn the_law_velocity_inverts_the_friction_velocity() {
        let nu = 1.0e-6;
        for &us in &[0.001, 0.02, 0.15, 0.4] {
            for &y in &[1e-4, 3e-3, 0.05] {
                let u = law_velocity(us, y, nu);
                let back = friction_velocity(u as f32, y as f32, nu as f32) as f64;
                assert!((back - us).abs() <= 1e-5 * us, "u* {us} y {y}: {back}");
            }
        }
    }

    /// The two branches meet at y+ 11.06 (the shear is continuous in the slip speed).
    #[test]
    fn the_sublayer_meets_the_log_law() {
        let law = Y_PLUS_SUBLAYER.ln() / KAPPA + B;
        assert!((law - Y_PLUS_SUBLAYER).abs() < 2e-3, "{law}");
    }

    /// Over a plane wall of boundary particles, the sum S of a column of fluid particles
    /// (times their volume) is 1/2: the shear of the whole column is tau_w per unit area.
    /// Wendland C2 in 3D at h = 2 dp, the wall 4 h deep; tolerance 2 %, the lattice's
    /// quadrature error of the kernel's surface integral at this h / dp.
    #[test]
    fn the_column_takes_the_walls_shear_per_unit_area() {
        use crate::physics::kernel::{SmoothingKernel, WendlandC2};
        let dp = 0.01_f64;
        let h = 2.0 * dp;
        let k = WendlandC2::new(h, 3);
        let vol = (dp * dp * dp) as f32;
        let layers = (4.0 * h / dp).round() as i32;
        let reach = (2.0 * h / dp).ceil() as i32 + 1;
        let mut column = 0.0_f64;
        for fz in 0..layers {
            let xi = V3::new(0.0, 0.0, ((fz as f64 + 0.5) * dp) as f32);
            let mut sums = WallSums::default();
            for bz in 0..layers {
                for bx in -reach..=reach {
                    for by in -reach..=reach {
                        let xb =
                            V3::new((bx as f64 * dp) as f32, (by as f64 * dp) as f32, (-(bz as f64 + 0.5) * dp) as f32);
                        let r = xi - xb;
                        let d = r.norm2().sqrt();
                        if d >= 2.0 * h as f32 {
                            continue;
                        }
                        let wall = [0.0, 0.0, 1.0, ((bz as f64 + 0.5) * dp) as f32];
                        wall_add(r, k.f(d), vol, wall, V3::ZERO, &mut sums);
                    }
                }
            }
            // Each fluid particle's distance to the wall comes back as Y / S within a
            // particle's: the weights lie on the wall's side.
            if sums.s > 0.0 {
                let y = sums.y / sums.s;
                assert!(y > 0.0 && y <= xi.z + 0.51 * dp as f32, "row {fz}: y {y} at {}", xi.z);
            }
            column += vol as f64 * sums.s as f64;
        }
        let per_area = column / (dp * dp);
        assert!((per_area - 0.5).abs() < 0.01, "sum V S per unit area {per_area}");
    }

    /// The shear opposes the slip, with magnitude 2 S rho u*² / rho, and ignores the normal
    /// velocity and a wall moving with the fluid.
    #[test]
    fn the_shear_opposes_the_slip() {
        let sums = WallSums { s: 50.0, n: V3::new(0.0, 0.0, 50.0), y: 50.0 * 0.003, v: V3::ZERO };
        let nu = 1.0e-6;
        let a = wall_shear(V3::new(4.0, 0.0, -1.0), &sums, 0.0015, nu);
        let us = friction_velocity(4.0, 0.003, nu);
        assert!((a.x + 2.0 * 50.0 * us * us).abs() < 1e-4 * a.x.abs() && a.y == 0.0 && a.z == 0.0, "{a:?}");
        assert!(us > 0.15 && us < 0.25, "u* {us}");
        let moving = WallSums { v: V3::new(4.0 * 50.0, 0.0, 0.0), ..sums };
        assert_eq!(wall_shear(V3::new(4.0, 0.0, -1.0), &moving, 0.0015, nu), V3::ZERO);
        assert_eq!(wall_shear(V3::new(4.0, 0.0, 0.0), &WallSums::default(), 0.0015, nu), V3::ZERO);
    }
}
