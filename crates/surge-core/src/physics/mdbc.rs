//! Modified dynamic boundary conditions (mDBC: English et al., Comp. Part. Mech. 2022, as in
//! DualSPHysics 5, `InteractionMdbcCorrection`).
//!
//! A boundary particle b at distance `dist` inside the wall, with the wall's inward unit
//! normal n (into the fluid; the `Wall` buffer, from the geometry), has its ghost node at
//! `x_g = x_b + 2 dist n`, mirrored across the wall surface. The fluid around the ghost gives,
//! by a first-order consistent interpolation (kernel-gradient corrected, Liu & Liu 2006), the
//! relative density `d_g` and its gradient: with `r = x_g - x_f`, `gw = grad_g W(r)` and
//! `V_f = m_f / rho_f`, the Taylor expansion `d_f = d_g - r . grad d` weighted by `V_f W` and
//! `V_f gw` and summed over the fluid gives the (dim+1)² system
//!
//! ```text
//! | sum V W    -sum V W r^T   | | d_g    |   | sum V d_f W  |
//! | sum V gw   -sum V gw r^T  | | grad d | = | sum V d_f gw |
//! ```
//!
//! solved in float64 when `|det A| >= DET_MIN` (DualSPHysics' limit; A is dimensionless up to
//! rows and columns of h and 1/h, whose product cancels in the determinant). Otherwise the
//! Shepard value `sum V d_f W / sum V W` is used when `sum V W >= SHEPARD_MIN`, and else the
//! ghost has no fluid worth the name: density rho0, velocity the wall's. The boundary
//! particle's density is the ghost's extrapolated back along the normal,
//! `d_b = d_g + grad d . (x_b - x_g)` (zeroth order: `d_g`), never below rho0 (`d_b >= 0`, as
//! DualSPHysics clamps and as DBC keeps it), so walls never attract fluid.
//!
//! The velocity the viscous term of the fluid sees for b comes from the ghost's velocity
//! `v_g` (the first row of the same solve, each component): no-slip `2 v_wall - v_g`, free
//! slip `v_wall + u_t - u_n` with `u = v_g - v_wall` split into its normal part `u_n =
//! (u . n) n` and tangential part `u_t`. The continuity equation keeps the wall's own
//! velocity. DualSPHysics 5.0's first mDBC left the boundary velocity at the wall's (no
//! treatment); its later no-slip and free-slip modes are what `slip = false | true` do here.
//!
//! Each function has a CUDA twin of the same name and argument order in
//! `kernels/physics/mdbc.cuh`.

use crate::V3;

/// Smallest `|det A|` for which the first-order system is solved (DualSPHysics: 1e-3).
pub const DET_MIN: f64 = 1e-3;

/// Smallest Shepard sum `sum V W` for the zeroth-order fallback: below it the ghost has
/// (almost) no fluid and the boundary particle is left at rho0.
pub const SHEPARD_MIN: f32 = 1e-3;

/// The offset of the ghost node of a boundary particle from the centre of the particle's
/// cell (`off` is the particle's offset, `wall` its inward normal and distance to the wall
/// surface), or None when the particle lies `support` (2h) or deeper inside the wall: no
/// fluid particle ever reaches it, so its values are never read and it is not updated.
#[inline(always)]
pub fn ghost_offset(off: V3, wall: [f32; 4], support: f32) -> Option<V3> {
    let dist = wall[3];
    if dist >= support || !(dist > 0.0) {
        return None;
    }
    Some(off + V3::from4(wall) * (2.0 * dist))
}

/// Sums over the fluid neighbours of a ghost node: the matrix A (row-major, the first
/// `dim + 1` rows and columns used) and four right-hand sides (relative density, then the
/// velocity components), each `[sum V q W, sum V q gw]` for the quantity q.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GhostSums {
    /// A.
    pub a: [[f32; 4]; 4],
    /// Right-hand sides: `b[0]` relative density, `b[1..4]` velocity x, y, z.
    pub b: [[f32; 4]; 4],
}

impl GhostSums {
    /// Add fluid neighbour f at `r = x_g - x_f` with kernel value `w`, kernel gradient at the
    /// ghost `gw = grad_g W(r)`, volume `vol`, relative density `d` and velocity `v`. Only
    /// the first DIM axes are summed.
    #[inline(always)]
    pub fn add<const DIM: usize>(&mut self, r: V3, w: f32, gw: V3, vol: f32, d: f32, v: V3) {
        let (r, gw) = ([r.x, r.y, r.z], [gw.x, gw.y, gw.z]);
        // Row 0 weighs by V W, row 1 + k by V gw_k.
        let mut weight = [vol * w, 0.0, 0.0, 0.0];
        for k in 0..DIM {
            weight[1 + k] = vol * gw[k];
        }
        let q = [d, v.x, v.y, v.z];
        for row in 0..=DIM {
            self.a[row][0] += weight[row];
            for k in 0..DIM {
                self.a[row][1 + k] -= weight[row] * r[k];
            }
            for (bq, qv) in self.b.iter_mut().zip(q) {
                bq[row] += weight[row] * qv;
            }
        }
    }
}

/// What the interpolation gives at a ghost node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ghost {
    /// Relative density `rho/rho0 - 1`.
    pub d: f32,
    /// Gradient of the relative density (0 at zeroth order).
    pub grad: V3,
    /// Velocity.
    pub vel: V3,
}

/// Solve `A x = b` in place for the four right-hand sides by Gaussian elimination with
/// partial pivoting on the first `n` rows and columns, in float64. Returns `det A` (0 when a
/// pivot is exactly 0, leaving `b` unusable).
#[inline(always)]
pub fn mdbc_solve(a: &mut [[f64; 4]; 4], b: &mut [[f64; 4]; 4], n: usize) -> f64 {
    let mut det = 1.0;
    for col in 0..n {
        let mut p = col;
        for row in col + 1..n {
            if a[row][col].abs() > a[p][col].abs() {
                p = row;
            }
        }
        if a[p][col] == 0.0 {
            return 0.0;
        }
        if p != col {
            a.swap(p, col);
            for q in b.iter_mut() {
                q.swap(p, col);
            }
            det = -det;
        }
        let piv = a[col][col];
        det *= piv;
        for row in col + 1..n {
            let f = a[row][col] / piv;
            for k in col..n {
                a[row][k] -= f * a[col][k];
            }
            for q in b.iter_mut() {
                q[row] -= f * q[col];
            }
        }
    }
    for q in b.iter_mut() {
        for row in (0..n).rev() {
            let mut s = q[row];
            for k in row + 1..n {
                s -= a[row][k] * q[k];
            }
            q[row] = s / a[row][row];
        }
    }
    det
}

/// The ghost node's values from its sums: first order when `|det A| >= DET_MIN`, else
/// Shepard when `sum V W >= SHEPARD_MIN`, else None (no fluid worth the name).
#[inline(always)]
pub fn ghost_values<const DIM: usize>(s: &GhostSums) -> Option<Ghost> {
    let n = DIM + 1;
    let mut a = [[0.0f64; 4]; 4];
    let mut b = [[0.0f64; 4]; 4];
    for row in 0..n {
        for k in 0..n {
            a[row][k] = s.a[row][k] as f64;
        }
        for q in 0..4 {
            b[q][row] = s.b[q][row] as f64;
        }
    }
    let det = mdbc_solve(&mut a, &mut b, n);
    if det.abs() >= DET_MIN {
        let mut grad = [0.0f32; 3];
        for k in 0..DIM {
            grad[k] = b[0][1 + k] as f32;
        }
        let vel = V3::new(b[1][0] as f32, b[2][0] as f32, b[3][0] as f32);
        return Some(Ghost { d: b[0][0] as f32, grad: V3::new(grad[0], grad[1], grad[2]), vel });
    }
    let shepard = s.a[0][0];
    if shepard >= SHEPARD_MIN {
        let vel = V3::new(s.b[1][0], s.b[2][0], s.b[3][0]) * (1.0 / shepard);
        return Some(Ghost { d: s.b[0][0] / shepard, grad: V3::new(0.0, 0.0, 0.0), vel });
    }
    None
}

/// Relative density of the boundary particle at `to_b = x_b - x_g` from its ghost: the
/// ghost's extrapolated linearly, never below rho0.
#[inline(always)]
pub fn boundary_density(d_ghost: f32, grad: V3, to_b: V3) -> f32 {
    (d_ghost + grad.dot(to_b)).max(0.0)
}

/// No-slip velocity of a boundary particle for the viscous term: the ghost's mirrored
/// through the wall's, `2 v_wall - v_ghost`.
#[inline(always)]
pub fn no_slip(v_wall: V3, v_ghost: V3) -> V3 {
    v_wall * 2.0 - v_ghost
}

/// Free-slip velocity: relative to the wall, the ghost's tangential part kept and its normal
/// part (along the unit normal n) mirrored.
#[inline(always)]
pub fn free_slip(v_wall: V3, v_ghost: V3, n: V3) -> V3 {
    let u = v_ghost - v_wall;
    v_wall + u - n * (2.0 * u.dot(n))
}

/// The mDBC values of a boundary particle (`[velocity for the viscous term, relative
/// density]`) from its ghost's sums; `wall` is its normal and distance, `v_wall` its own
/// (prescribed) velocity. A ghost without fluid leaves the particle at rho0 and the wall's
/// velocity.
#[inline(always)]
pub fn mdbc_state<const DIM: usize>(s: &GhostSums, wall: [f32; 4], v_wall: V3, slip: bool) -> [f32; 4] {
    let n = V3::from4(wall);
    match ghost_values::<DIM>(s) {
        Some(g) => {
            let d = boundary_density(g.d, g.grad, n * (-2.0 * wall[3]));
            let v = if slip { free_slip(v_wall, g.vel, n) } else { no_slip(v_wall, g.vel) };
            v.with_w(d)
        }
        None => v_wall.with_w(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::physics::kernel::{SmoothingKernel, WendlandC2};

    #[test]
    fn a_hand_solved_system() {
        // 2D: A = [[2, 1, 0], [1, 3, 1], [0, 1, 4]], det = 2(12 - 1) - 1(4 - 0) = 18;
        // x = [1, 2, 3] gives b = [4, 10, 14].
        let mut a = [[2.0, 1.0, 0.0, 0.0], [1.0, 3.0, 1.0, 0.0], [0.0, 1.0, 4.0, 0.0], [0.0; 4]];
        let mut b = [[4.0, 10.0, 14.0, 0.0], [2.0, 1.0, 0.0, 0.0], [0.0; 4], [0.0; 4]];
        let det = mdbc_solve(&mut a, &mut b, 3);
        assert!((det - 18.0).abs() < 1e-12, "det {det}");
        for (x, want) in b[0].iter().zip([1.0, 2.0, 3.0]) {
            assert!((x - want).abs() < 1e-12, "{:?}", b[0]);
        }
        // The second right-hand side is A's first column: x = e1.
        assert!((b[1][0] - 1.0).abs() < 1e-12 && b[1][1].abs() < 1e-12 && b[1][2].abs() < 1e-12);
        // A pivot swap flips the sign of the determinant: rows swapped, det -18.
        let mut a = [[1.0, 3.0, 1.0, 0.0], [2.0, 1.0, 0.0, 0.0], [0.0, 1.0, 4.0, 0.0], [0.0; 4]];
        let mut b = [[0.0; 4]; 4];
        assert!((mdbc_solve(&mut a, &mut b, 3) + 18.0).abs() < 1e-12);
        // Singular.
        let mut a = [[1.0, 2.0, 0.0, 0.0], [2.0, 4.0, 0.0, 0.0], [0.0; 4], [0.0; 4]];
        assert_eq!(mdbc_solve(&mut a, &mut b, 2), 0.0);
    }

    #[test]
    fn velocities_mirror_through_the_wall() {
        let (vw, vg, n) = (V3::new(1.0, 0.0, 0.0), V3::new(3.0, 2.0, 0.0), V3::new(0.0, 1.0, 0.0));
        assert_eq!(no_slip(vw, vg), V3::new(-1.0, -2.0, 0.0));
        // Relative to the wall u = (2, 2): tangential 2 kept, normal 2 mirrored.
        assert_eq!(free_slip(vw, vg, n), V3::new(3.0, -2.0, 0.0));
        assert_eq!(boundary_density(0.01, V3::new(0.0, -0.5, 0.0), V3::new(0.0, -0.02, 0.0)), 0.02);
        assert_eq!(boundary_density(0.001, V3::new(0.0, 1.0, 0.0), V3::new(0.0, -0.02, 0.0)), 0.0, "never below rho0");
        assert_eq!(ghost_offset(V3::new(0.1, 0.0, 0.0), [0.0, 1.0, 0.0, 0.25], 1.0), Some(V3::new(0.1, 0.5, 0.0)));
        assert_eq!(ghost_offset(V3::new(0.1, 0.0, 0.0), [0.0, 1.0, 0.0, 1.0], 1.0), None, "2h deep");
    }

    /// The ghost sums of a full 2D lattice of spacing dp around x_g with a linear density
    /// d(x) = d0 + gx . x and a uniform velocity.
    fn lattice_sums(xg: [f32; 2], d0: f32, gx: [f32; 2], vel: V3, keep: impl Fn(f32, f32) -> bool) -> GhostSums {
        let (h, dp) = (0.03f32, 0.02f32);
        let k = WendlandC2::new(h as f64, 2);
        let mut s = GhostSums::default();
        for i in -10..=10 {
            for j in -10..=10 {
                let (x, y) = ((i as f32 + 0.5) * dp, (j as f32 + 0.5) * dp);
                if !keep(x, y) {
                    continue;
                }
                let r = V3::new(xg[0] - x, xg[1] - y, 0.0);
                let q = r.norm2().sqrt();
                if q >= 2.0 * h {
                    continue;
                }
                let d = d0 + gx[0] * x + gx[1] * y;
                let vol = dp * dp / (1.0 + d);
                s.add::<2>(r, k.w(q), r * k.f(q), vol, d, vel);
            }
        }
        s
    }

    #[test]
    fn a_linear_field_is_reproduced_by_the_first_order_interpolation() {
        let vel = V3::new(0.3, -0.1, 0.0);
        // Full support: exact to float32 rounding.
        let s = lattice_sums([0.013, -0.004], 0.01, [0.5, -2.0], vel, |_, _| true);
        let g = ghost_values::<2>(&s).unwrap();
        assert!((g.d - (0.01 + 0.5 * 0.013 + 2.0 * 0.004)).abs() < 1e-6, "{g:?}");
        assert!((g.grad.x - 0.5).abs() < 1e-3 && (g.grad.y + 2.0).abs() < 1e-3, "{g:?}");
        assert!((g.vel - vel).norm2() < 1e-10, "{g:?}");
        // Half a support (the fluid above a wall at y = 0, the ghost dp above it): still
        // exact, where a Shepard sum would be off by the gradient times the offset.
        let s = lattice_sums([0.0, 0.02], 0.02, [0.0, -1.0], vel, |_, y| y > 0.0);
        let g = ghost_values::<2>(&s).unwrap();
        assert!((g.d - (0.02 - 0.02)).abs() < 1e-6 && (g.grad.y + 1.0).abs() < 1e-3, "{g:?}");
        // The boundary particle dp/2 below the wall: its ghost at +dp/2 extrapolates to
        // d(-dp/2) = 0.02 + 0.01.
        let s = lattice_sums([0.0, 0.01], 0.02, [0.0, -1.0], V3::new(0.0, 0.0, 0.0), |_, y| y > 0.0);
        let st = mdbc_state::<2>(&s, [0.0, 1.0, 0.0, 0.01], V3::new(0.0, 0.0, 0.0), false);
        assert!((st[3] - 0.03).abs() < 1e-6, "{st:?}");
        // No fluid: rho0 and the wall's velocity.
        let none = GhostSums::default();
        assert_eq!(mdbc_state::<2>(&none, [0.0, 1.0, 0.0, 0.01], V3::new(0.5, 0.0, 0.0), true), [0.5, 0.0, 0.0, 0.0]);
        // A single far neighbour: A is singular, Shepard gives its values.
        let s = lattice_sums([0.0, 0.0], 0.004, [0.0, 0.0], vel, |x, y| x > 0.0 && x < 0.02 && y > 0.02 && y < 0.04);
        assert!(s.a[0][0] >= SHEPARD_MIN);
        let g = ghost_values::<2>(&s).unwrap();
        assert!((g.d - 0.004).abs() < 1e-7 && g.grad == V3::new(0.0, 0.0, 0.0), "{g:?}");
    }
}
