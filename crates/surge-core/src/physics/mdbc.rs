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
//! `v_g`, its Shepard (zeroth-order) interpolation `sum V v_f W / sum V W`, as DualSPHysics
//! 5.0's `KerInteractionBoundCorrection` takes it ("ghost node velocity (0th order)"): the
//! velocity enters only the viscous term, and the first order would add 9 sums a neighbour to
//! the ghost's 20 (open boundaries, whose buffer particles move with the extrapolated
//! velocity, take it to first order: [`GhostVelocity`]). No-slip `2 v_wall - v_g`, free
//! slip `v_wall + u_t - u_n` with `u = v_g - v_wall` split into its normal part `u_n =
//! (u . n) n` and tangential part `u_t`. The continuity equation keeps the wall's own
//! velocity. DualSPHysics 5.0's first mDBC left the boundary velocity at the wall's (no
//! treatment); its later no-slip and free-slip modes are what `slip = false | true` do here.
//!
//! Each function has a CUDA twin of the same name and argument order in
//! `kernels/physics/mdbc.cuh`.

use crate::case::Slip;
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
/// velocity components), each `[sum V q W, sum V q gw]` for the quantity q. A velocity's
/// Shepard value reads only its first entry ([`GhostVelocity::Shepard`]): sums added with
/// `VEL_FIRST = false` hold only those (the others stay 0), as the GPU's
/// `ghost_add<VEL_FIRST>` sums them.
///
/// A's block of rows and columns 1.. is `-sum V gw r^T`, symmetric (gw = r F(|r|) is
/// parallel to r), so only its upper triangle (column >= row) is summed; [`ghost_values`]
/// reads the lower triangle from it. Three sums fewer a neighbour, and on the GPU three
/// registers fewer in the loop.
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
    /// the first DIM axes are summed, and the velocity's gradient rows only with `VEL_FIRST`
    /// (for [`GhostVelocity::FirstOrder`]).
    #[inline(always)]
    pub fn add<const DIM: usize, const VEL_FIRST: bool>(&mut self, r: V3, w: f32, gw: V3, vol: f32, d: f32, v: V3) {
        let (r, gw) = ([r.x, r.y, r.z], [gw.x, gw.y, gw.z]);
        // Row 0 weighs by V W, row 1 + k by V gw_k.
        let mut weight = [vol * w, 0.0, 0.0, 0.0];
        for k in 0..DIM {
            weight[1 + k] = vol * gw[k];
        }
        let q = [d, v.x, v.y, v.z];
        for row in 0..=DIM {
            self.a[row][0] += weight[row];
            // Row 0 whole; rows 1.. from their diagonal on (the block is symmetric).
            for k in row.saturating_sub(1)..DIM {
                self.a[row][1 + k] -= weight[row] * r[k];
            }
            for (c, (bq, qv)) in self.b.iter_mut().zip(q).enumerate() {
                if row == 0 || c == 0 || VEL_FIRST {
                    bq[row] += weight[row] * qv;
                }
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

/// `det A` and the adjugate `adj A` (`A^-1 = adj A / det A`) of the first `n` (3 or 4) rows
/// and columns of `a`, in float64, by cofactors written out (Laplace expansion by
/// complementary 2 x 2 minors for n = 4): no pivoting and no indexing by a value, so the CUDA
/// twin keeps everything in registers. Unused entries of the adjugate are 0. The first-order
/// system is only solved for `|det A| >= DET_MIN`, where A's entries (sums of kernel values
/// and gradients times volumes, of order 1 and 1/h) leave float64 far from cancellation.
#[inline(always)]
pub fn adjugate(a: &[[f64; 4]; 4], n: usize) -> (f64, [[f64; 4]; 4]) {
    let mut adj = [[0.0f64; 4]; 4];
    if n == 3 {
        let c = |r0: usize, r1: usize, c0: usize, c1: usize| a[r0][c0] * a[r1][c1] - a[r0][c1] * a[r1][c0];
        adj[0][0] = c(1, 2, 1, 2);
        adj[0][1] = -c(0, 2, 1, 2);
        adj[0][2] = c(0, 1, 1, 2);
        adj[1][0] = -c(1, 2, 0, 2);
        adj[1][1] = c(0, 2, 0, 2);
        adj[1][2] = -c(0, 1, 0, 2);
        adj[2][0] = c(1, 2, 0, 1);
        adj[2][1] = -c(0, 2, 0, 1);
        adj[2][2] = c(0, 1, 0, 1);
        let det = a[0][0] * adj[0][0] + a[0][1] * adj[1][0] + a[0][2] * adj[2][0];
        return (det, adj);
    }
    debug_assert_eq!(n, 4);
    // 2 x 2 minors of rows 0-1 (s) and rows 2-3 (c), columns (0,1) (0,2) (0,3) (1,2) (1,3) (2,3).
    let m = |r: usize, c0: usize, c1: usize| a[r][c0] * a[r + 1][c1] - a[r][c1] * a[r + 1][c0];
    let s = [m(0, 0, 1), m(0, 0, 2), m(0, 0, 3), m(0, 1, 2), m(0, 1, 3), m(0, 2, 3)];
    let c = [m(2, 0, 1), m(2, 0, 2), m(2, 0, 3), m(2, 1, 2), m(2, 1, 3), m(2, 2, 3)];
    let det = s[0] * c[5] - s[1] * c[4] + s[2] * c[3] + s[3] * c[2] - s[4] * c[1] + s[5] * c[0];
    adj[0] = [
        a[1][1] * c[5] - a[1][2] * c[4] + a[1][3] * c[3],
        -a[0][1] * c[5] + a[0][2] * c[4] - a[0][3] * c[3],
        a[3][1] * s[5] - a[3][2] * s[4] + a[3][3] * s[3],
        -a[2][1] * s[5] + a[2][2] * s[4] - a[2][3] * s[3],
    ];
    adj[1] = [
        -a[1][0] * c[5] + a[1][2] * c[2] - a[1][3] * c[1],
        a[0][0] * c[5] - a[0][2] * c[2] + a[0][3] * c[1],
        -a[3][0] * s[5] + a[3][2] * s[2] - a[3][3] * s[1],
        a[2][0] * s[5] - a[2][2] * s[2] + a[2][3] * s[1],
    ];
    adj[2] = [
        a[1][0] * c[4] - a[1][1] * c[2] + a[1][3] * c[0],
        -a[0][0] * c[4] + a[0][1] * c[2] - a[0][3] * c[0],
        a[3][0] * s[4] - a[3][1] * s[2] + a[3][3] * s[0],
        -a[2][0] * s[4] + a[2][1] * s[2] - a[2][3] * s[0],
    ];
    adj[3] = [
        -a[1][0] * c[3] + a[1][1] * c[1] - a[1][2] * c[0],
        a[0][0] * c[3] - a[0][1] * c[1] + a[0][2] * c[0],
        -a[3][0] * s[3] + a[3][1] * s[1] - a[3][2] * s[0],
        a[2][0] * s[3] - a[2][1] * s[1] + a[2][2] * s[0],
    ];
    (det, adj)
}

/// How a ghost node's velocity is interpolated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GhostVelocity {
    /// `sum V v W / sum V W` (mDBC walls, as DualSPHysics 5.0).
    Shepard,
    /// The first entry of `A^-1 b_c` for each component c when the density is solved to
    /// first order, else Shepard (open boundaries).
    FirstOrder,
}

/// The ghost node's values from its sums: first order when `|det A| >= DET_MIN`, else
/// Shepard when `sum V W >= SHEPARD_MIN`, else None (no fluid worth the name). The first
/// order takes all of `A^-1 b_0` (the density and its gradient); the velocity is `order`'s
/// (`FirstOrder` needs sums added with `VEL_FIRST`).
#[inline(always)]
pub fn ghost_values<const DIM: usize>(s: &GhostSums, order: GhostVelocity) -> Option<Ghost> {
    let n = DIM + 1;
    let mut a = [[0.0f64; 4]; 4];
    for row in 0..n {
        for k in 0..n {
            // The symmetric block's lower triangle is its upper one (GhostSums).
            a[row][k] = if row > k && k > 0 { s.a[k][row] } else { s.a[row][k] } as f64;
        }
    }
    let (det, adj) = adjugate(&a, n);
    if det.abs() >= DET_MIN {
        let inv = 1.0 / det;
        // Row `row` of A^-1 times right-hand side q.
        let solve = |row: usize, q: usize| -> f32 {
            let mut x = 0.0f64;
            for k in 0..n {
                x += adj[row][k] * s.b[q][k] as f64;
            }
            (x * inv) as f32
        };
        let mut grad = [0.0f32; 3];
        for k in 0..DIM {
            grad[k] = solve(1 + k, 0);
        }
        let vel = match order {
            GhostVelocity::FirstOrder => V3::new(solve(0, 1), solve(0, 2), solve(0, 3)),
            GhostVelocity::Shepard => shepard_velocity(s),
        };
        return Some(Ghost { d: solve(0, 0), grad: V3::new(grad[0], grad[1], grad[2]), vel });
    }
    let shepard = s.a[0][0];
    if shepard >= SHEPARD_MIN {
        return Some(Ghost { d: s.b[0][0] / shepard, grad: V3::new(0.0, 0.0, 0.0), vel: shepard_velocity(s) });
    }
    None
}

/// The ghost's Shepard velocity `sum V v W / sum V W`.
#[inline(always)]
fn shepard_velocity(s: &GhostSums) -> V3 {
    V3::new(s.b[1][0], s.b[2][0], s.b[3][0]) * (1.0 / s.a[0][0])
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
/// (prescribed) velocity, `slip` what the viscous term sees. A ghost without fluid leaves the
/// particle at rho0 and the wall's velocity.
#[inline(always)]
pub fn mdbc_state<const DIM: usize>(s: &GhostSums, wall: [f32; 4], v_wall: V3, slip: Slip) -> [f32; 4] {
    let n = V3::from4(wall);
    match ghost_values::<DIM>(s, GhostVelocity::Shepard) {
        Some(g) => {
            let d = boundary_density(g.d, g.grad, n * (-2.0 * wall[3]));
            let v = match slip {
                Slip::Free => free_slip(v_wall, g.vel, n),
                Slip::No => no_slip(v_wall, g.vel),
                Slip::Wall => v_wall,
            };
            v.with_w(d)
        }
        None => v_wall.with_w(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::physics::kernel::{SmoothingKernel, WendlandC2};

    /// `A x` for the first n rows and columns.
    fn times(a: &[[f64; 4]; 4], x: [f64; 4], n: usize) -> [f64; 4] {
        let mut y = [0.0; 4];
        for r in 0..n {
            for k in 0..n {
                y[r] += a[r][k] * x[k];
            }
        }
        y
    }

    #[test]
    fn the_adjugate_solves_hand_made_systems() {
        // 3 x 3: A = [[2, 1, 0], [1, 3, 1], [0, 1, 4]], det = 2(12 - 1) - 1(4 - 0) = 18;
        // A [1, 2, 3] = [4, 10, 14].
        let a = [[2.0, 1.0, 0.0, 0.0], [1.0, 3.0, 1.0, 0.0], [0.0, 1.0, 4.0, 0.0], [0.0; 4]];
        let (det, adj) = adjugate(&a, 3);
        assert!((det - 18.0).abs() < 1e-12, "det {det}");
        let x = times(&adj, [4.0, 10.0, 14.0, 0.0], 3).map(|v| v / det);
        for (x, want) in x.iter().zip([1.0, 2.0, 3.0]) {
            assert!((x - want).abs() < 1e-12, "{x:?}");
        }
        // Rows swapped: det -18.
        let a = [[1.0, 3.0, 1.0, 0.0], [2.0, 1.0, 0.0, 0.0], [0.0, 1.0, 4.0, 0.0], [0.0; 4]];
        assert!((adjugate(&a, 3).0 + 18.0).abs() < 1e-12);
        // Singular.
        let a = [[1.0, 2.0, 3.0, 0.0], [2.0, 4.0, 6.0, 0.0], [0.0, 1.0, 1.0, 0.0], [0.0; 4]];
        assert_eq!(adjugate(&a, 3).0, 0.0);
        // 4 x 4 with zeros on the diagonal (elimination would have to pivot): A adj A = det I,
        // and det equals the expansion along the first row.
        let a = [[0.0, 2.0, 1.0, 3.0], [1.0, 0.0, 2.0, 1.0], [3.0, 1.0, 0.0, 2.0], [2.0, 3.0, 1.0, 0.0]];
        let (det, adj) = adjugate(&a, 4);
        for c in 0..4 {
            let col = times(&a, [adj[0][c], adj[1][c], adj[2][c], adj[3][c]], 4);
            for r in 0..4 {
                let want = if r == c { det } else { 0.0 };
                assert!((col[r] - want).abs() < 1e-12, "A adj A column {c}: {col:?}, det {det}");
            }
        }
        assert!((det - det4_by_first_row(&a)).abs() < 1e-12, "det {det}");
    }

    /// det of a 4 x 4 by expansion along its first row (3 x 3 minors by the rule of Sarrus).
    fn det4_by_first_row(a: &[[f64; 4]; 4]) -> f64 {
        let minor = |skip: usize| {
            let cols: Vec<usize> = (0..4).filter(|&c| c != skip).collect();
            let m = |r: usize, k: usize| a[r][cols[k]];
            m(1, 0) * (m(2, 1) * m(3, 2) - m(2, 2) * m(3, 1)) - m(1, 1) * (m(2, 0) * m(3, 2) - m(2, 2) * m(3, 0))
                + m(1, 2) * (m(2, 0) * m(3, 1) - m(2, 1) * m(3, 0))
        };
        (0..4).map(|c| if c % 2 == 0 { 1.0 } else { -1.0 } * a[0][c] * minor(c)).sum()
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
    /// d(x) = d0 + gx . x and the velocity field `vel`.
    fn lattice_sums<const VEL_FIRST: bool>(
        xg: [f32; 2],
        d0: f32,
        gx: [f32; 2],
        vel: impl Fn(f32, f32) -> V3,
        keep: impl Fn(f32, f32) -> bool,
    ) -> GhostSums {
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
                s.add::<2, VEL_FIRST>(r, k.w(q), r * k.f(q), vol, d, vel(x, y));
            }
        }
        s
    }

    #[test]
    fn a_linear_field_is_reproduced_by_the_first_order_interpolation() {
        let vel = V3::new(0.3, -0.1, 0.0);
        // Full support: exact to float32 rounding.
        let s = lattice_sums::<true>([0.013, -0.004], 0.01, [0.5, -2.0], |_, _| vel, |_, _| true);
        let g = ghost_values::<2>(&s, GhostVelocity::FirstOrder).unwrap();
        assert!((g.d - (0.01 + 0.5 * 0.013 + 2.0 * 0.004)).abs() < 1e-6, "{g:?}");
        assert!((g.grad.x - 0.5).abs() < 1e-3 && (g.grad.y + 2.0).abs() < 1e-3, "{g:?}");
        assert!((g.vel - vel).norm2() < 1e-10, "{g:?}");
        // A uniform velocity: the Shepard value is exact too, and the density the same.
        let z = ghost_values::<2>(&s, GhostVelocity::Shepard).unwrap();
        assert!((z.vel - vel).norm2() < 1e-10 && z.d == g.d && z.grad == g.grad, "{z:?}");
        // Half a support (the fluid above a wall at y = 0, the ghost dp above it): still
        // exact, where a Shepard sum would be off by the gradient times the offset.
        let s = lattice_sums::<true>([0.0, 0.02], 0.02, [0.0, -1.0], |_, _| vel, |_, y| y > 0.0);
        let g = ghost_values::<2>(&s, GhostVelocity::FirstOrder).unwrap();
        assert!((g.d - (0.02 - 0.02)).abs() < 1e-6 && (g.grad.y + 1.0).abs() < 1e-3, "{g:?}");
        // The boundary particle dp/2 below the wall: its ghost at +dp/2 extrapolates to
        // d(-dp/2) = 0.02 + 0.01.
        let s = lattice_sums::<true>([0.0, 0.01], 0.02, [0.0, -1.0], |_, _| V3::new(0.0, 0.0, 0.0), |_, y| y > 0.0);
        let st = mdbc_state::<2>(&s, [0.0, 1.0, 0.0, 0.01], V3::new(0.0, 0.0, 0.0), Slip::No);
        assert!((st[3] - 0.03).abs() < 1e-6, "{st:?}");
        // The slip changes the velocity only: no-slip mirrors the ghost's through the wall's,
        // free slip mirrors its normal part, `Wall` shows the wall's own velocity.
        let s = lattice_sums::<true>([0.0, 0.01], 0.02, [0.0, -1.0], |_, _| vel, |_, y| y > 0.0);
        let (wall, v_wall) = ([0.0, 1.0, 0.0, 0.01], V3::new(0.3, 0.0, 0.0));
        let [no, free, own] = [Slip::No, Slip::Free, Slip::Wall].map(|k| mdbc_state::<2>(&s, wall, v_wall, k));
        assert!(no[3] == free[3] && no[3] == own[3], "{no:?} {free:?} {own:?}");
        let g = ghost_values::<2>(&s, GhostVelocity::Shepard).unwrap().vel;
        assert!((V3::from4(no) - (v_wall * 2.0 - g)).norm2() < 1e-10, "{no:?}");
        assert!((V3::from4(free) - V3::new(g.x, -g.y, 0.0)).norm2() < 1e-10, "{free:?}");
        assert_eq!(V3::from4(own), v_wall);
        // No fluid: rho0 and the wall's velocity.
        let none = GhostSums::default();
        assert_eq!(
            mdbc_state::<2>(&none, [0.0, 1.0, 0.0, 0.01], V3::new(0.5, 0.0, 0.0), Slip::Free),
            [0.5, 0.0, 0.0, 0.0]
        );
        // A single far neighbour: A is singular, Shepard gives its values.
        let s = lattice_sums::<true>(
            [0.0, 0.0],
            0.004,
            [0.0, 0.0],
            |_, _| vel,
            |x, y| x > 0.0 && x < 0.02 && y > 0.02 && y < 0.04,
        );
        assert!(s.a[0][0] >= SHEPARD_MIN);
        let g = ghost_values::<2>(&s, GhostVelocity::FirstOrder).unwrap();
        assert!((g.d - 0.004).abs() < 1e-7 && g.grad == V3::new(0.0, 0.0, 0.0), "{g:?}");
    }

    #[test]
    fn the_velocity_orders_differ_where_the_velocity_varies() {
        // u = 2 y over the fluid above a wall at y = 0, the ghost at y = 0.02: the first order
        // gives u(0.02) = 0.04 (to float32 rounding); Shepard the kernel-weighted mean over the
        // half support, which lies higher (mDBC walls take it, as DualSPHysics 5.0 does).
        let s = lattice_sums::<true>([0.0, 0.02], 0.0, [0.0, 0.0], |_, y| V3::new(2.0 * y, 0.0, 0.0), |_, y| y > 0.0);
        let first = ghost_values::<2>(&s, GhostVelocity::FirstOrder).unwrap().vel;
        let shepard = ghost_values::<2>(&s, GhostVelocity::Shepard).unwrap().vel;
        assert!((first.x - 0.04).abs() < 1e-6, "{first:?}");
        assert!(shepard.x > 0.045 && shepard.x < 0.08, "{shepard:?}");
        assert_eq!(shepard.x, s.b[1][0] * (1.0 / s.a[0][0]));
        // Summed without the velocity's gradient rows (the mDBC passes): the same values.
        let lean =
            lattice_sums::<false>([0.0, 0.02], 0.0, [0.0, 0.0], |_, y| V3::new(2.0 * y, 0.0, 0.0), |_, y| y > 0.0);
        assert!(lean.b[1][1..].iter().all(|&x| x == 0.0) && s.b[1][1..].iter().any(|&x| x != 0.0));
        assert_eq!(ghost_values::<2>(&lean, GhostVelocity::Shepard), ghost_values::<2>(&s, GhostVelocity::Shepard));
    }
}
