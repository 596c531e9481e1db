//! The body of the neighbour loop: what one neighbour j adds to particle i. Backends own the
//! loop (which cells, which order, which threads); this is the physics inside it.

use super::constants::Constants;
use super::kernel::{CubicSpline, SmoothingKernel, WendlandC2};
use super::options::*;
use super::viscosity::morris_wall_factor;
use super::wall_function::{wall_add, WallSums};
use crate::case::{Boundary, Case, Diffusion, Shifting, Viscosity};
use crate::config::KernelKind;
use crate::V3;

/// What the loop reads of a particle (i or j).
#[derive(Debug, Clone, Copy)]
pub struct PairParticle {
    /// Velocity.
    pub vel: V3,
    /// Physical density.
    pub rho: f32,
    /// Pressure.
    pub p: f32,
    /// Mass.
    pub m: f32,
    /// Boundary particles with [`ViscosityModel::MIRROR_WALL`] or a wall function: wall
    /// normal and distance.
    pub wall: [f32; 4],
    /// Boundary particles with [`BoundaryModel::MDBC`]: the velocity the viscous term sees
    /// (xyz) and the relative density from the ghost node (w).
    pub mdbc: [f32; 4],
}

/// What the loop accumulates for particle i.
#[derive(Debug, Clone, Copy, Default)]
pub struct Accum {
    /// Acceleration without the body force.
    pub acc: V3,
    /// Rate of the physical density.
    pub drho: f32,
    /// Largest `h |v_ij . r_ij| / (r² + eta²)` over the pairs (time-step criterion).
    pub visc_max: f32,
    /// Shifting: concentration gradient `sum V_j grad W`.
    pub grad_c: V3,
    /// Shifting: position divergence `-sum V_j r_ij . grad W`.
    pub div_r: f32,
    /// A wall function's sums over the boundary neighbours ([`super::wall_function`]).
    pub wall: WallSums,
}

/// The compile-time selected formula set of a case: kernel K, viscosity V, diffusion D,
/// shifting S, boundary model B, and the dimension DIM (2 or 3).
#[derive(Debug, Clone, Copy)]
pub struct Physics<K, V, D, S, B, const DIM: usize> {
    /// Kernel with its constants.
    pub kernel: K,
    /// Viscosity model.
    pub visc: V,
    /// Density diffusion model.
    pub diff: D,
    /// Smoothing length.
    pub h: f32,
    /// `(2h)²`: pairs at or beyond it do not interact.
    pub support2: f32,
    /// `eta² = 0.01 h²`.
    pub eta2: f32,
    /// Shifting marker.
    pub shift: S,
    /// Boundary model marker.
    pub boundary: B,
    /// The wall function's molecular viscosity; 0 without one (its sums are not taken).
    pub wall_nu: f32,
}

impl<
        K: SmoothingKernel,
        V: ViscosityModel,
        D: DiffusionModel,
        S: ShiftingModel,
        B: BoundaryModel,
        const DIM: usize,
    > Physics<K, V, D, S, B, DIM>
{
    /// Geometry of a pair at separation r (within the support, r² > 0).
    #[inline(always)]
    pub fn geom(&self, r: V3, r2: f32, vi: V3, vj: V3) -> PairGeom {
        let f = self.kernel.f(r2.sqrt());
        let v = vi - vj;
        PairGeom { r, r2, f, gw: r * f, v, vr: v.dot(r) }
    }

    /// Fluid particle i, neighbour j (fluid or boundary): pressure gradient, viscosity,
    /// continuity, and density diffusion between fluid particles only.
    #[inline(always)]
    pub fn fluid_pair(&self, r: V3, r2: f32, pi: &PairParticle, pj: &PairParticle, j_fluid: bool, out: &mut Accum) {
        let g = self.geom(r, r2, pi.vel, pj.vel);
        let p_term = (pi.p + pj.p) / (pi.rho * pj.rho);
        out.acc -= g.gw * (pj.m * p_term);
        // A boundary neighbour's viscosity takes the case's boundary factor (acc_wall).
        if B::MDBC && !j_fluid {
            // The wall's no-slip or free-slip velocity from the ghost node, for viscosity only.
            let v = pi.vel - V3::from4(pj.mdbc);
            let gm = PairGeom { v, vr: v.dot(r), ..g };
            out.acc += self.visc.acc_wall(&gm, pi.rho, pj.rho, pj.m);
        } else if V::MIRROR_WALL && !j_fluid {
            let beta = morris_wall_factor(V3::from4(pj.wall), pj.wall[3], r);
            let gm = PairGeom { v: g.v * beta, vr: g.vr * beta, ..g };
            out.acc += self.visc.acc_wall(&gm, pi.rho, pj.rho, pj.m);
        } else if !j_fluid {
            out.acc += self.visc.acc_wall(&g, pi.rho, pj.rho, pj.m);
        } else {
            out.acc += self.visc.acc(&g, pi.rho, pj.rho, pj.m);
        }
        out.drho += pj.m * g.v.dot(g.gw);
        if D::ON && j_fluid {
            out.drho += self.diff.rate(&g, pi.rho, pj.rho, pj.m / pj.rho);
        }
        if S::ON {
            let vol = pj.m / pj.rho;
            out.grad_c += g.gw * vol;
            out.div_r -= vol * r.dot(g.gw);
        }
        if self.wall_nu > 0.0 && !j_fluid {
            wall_add(r, g.f, pj.m / pj.rho, pj.wall, pj.vel, &mut out.wall);
        }
        // The step's viscous bound keeps v_i - v_j at mDBC walls too, the fluid's speed past
        // the wall particles (taking the ghost's velocity instead, as the viscous term does,
        // let Test 2's late flow at dp 0.01 out of the density range: docs/ARCHITECTURE.md).
        out.visc_max = out.visc_max.max((self.h * g.vr / (r2 + self.eta2)).abs());
    }

    /// Boundary particle i (dynamic boundary), fluid neighbour j: continuity only (DBC; with
    /// mDBC boundary particles have no neighbour loop).
    #[inline(always)]
    pub fn boundary_pair(&self, r: V3, r2: f32, pi: &PairParticle, pj: &PairParticle, out: &mut Accum) {
        let g = self.geom(r, r2, pi.vel, pj.vel);
        out.drho += pj.m * g.v.dot(g.gw);
    }
}

/// Something generic over the physics options, run once the case has picked them.
pub trait WithPhysics {
    /// What the call returns.
    type Output;
    /// Called with the monomorphised formula set.
    fn call<
        K: SmoothingKernel,
        V: ViscosityModel,
        D: DiffusionModel,
        S: ShiftingModel,
        B: BoundaryModel,
        const DIM: usize,
    >(
        self,
        p: Physics<K, V, D, S, B, DIM>,
    ) -> Self::Output;
}

/// The one runtime match: build the case's [`Physics`] from its constants (`c`, from
/// [`Constants::of`] of the same case) and hand it to `f`.
pub fn dispatch<F: WithPhysics>(case: &Case, c: &Constants, f: F) -> F::Output {
    match case.kernel {
        KernelKind::WendlandC2 => dispatch_k(case, c, WendlandC2::new(case.h, case.dim), f),
        KernelKind::CubicSpline => dispatch_k(case, c, CubicSpline::new(case.h, case.dim), f),
    }
}

fn dispatch_k<K: SmoothingKernel, F: WithPhysics>(case: &Case, c: &Constants, kernel: K, f: F) -> F::Output {
    match case.viscosity {
        Viscosity::Artificial { .. } => {
            let visc = Artificial { alpha: c.alpha, alpha_wall: c.alpha_wall, h: c.h, c0: c.c0, eta2: c.eta2 };
            dispatch_v(case, c, kernel, visc, f)
        }
        Viscosity::Laminar { .. } => {
            dispatch_v(case, c, kernel, Laminar { nu: c.nu, nu_wall: c.nu_wall, eta2: c.eta2 }, f)
        }
    }
}

fn dispatch_v<K: SmoothingKernel, V: ViscosityModel, F: WithPhysics>(
    case: &Case,
    c: &Constants,
    kernel: K,
    visc: V,
    f: F,
) -> F::Output {
    match case.diffusion {
        Diffusion::None => dispatch_d(case, c, kernel, visc, NoDiffusion, f),
        Diffusion::MolteniColagrossi { .. } => {
            let diff = MolteniColagrossi { delta_h_c0: c.delta_h_c0, eta2: c.eta2 };
            dispatch_d(case, c, kernel, visc, diff, f)
        }
        Diffusion::Fourtakas { .. } => {
            let diff = Fourtakas {
                delta_h_c0: c.delta_h_c0,
                eta2: c.eta2,
                rho0: c.rho0,
                g: c.g,
                inv_b: c.inv_b,
                inv_gamma: c.inv_gamma,
            };
            dispatch_d(case, c, kernel, visc, diff, f)
        }
    }
}

fn dispatch_d<K: SmoothingKernel, V: ViscosityModel, D: DiffusionModel, F: WithPhysics>(
    case: &Case,
    c: &Constants,
    kernel: K,
    visc: V,
    diff: D,
    f: F,
) -> F::Output {
    match case.shifting {
        Shifting::None => dispatch_s(case, c, kernel, visc, diff, NoShifting, f),
        Shifting::Lind { .. } => dispatch_s(case, c, kernel, visc, diff, LindShifting, f),
    }
}

fn dispatch_s<K: SmoothingKernel, V: ViscosityModel, D: DiffusionModel, S: ShiftingModel, F: WithPhysics>(
    case: &Case,
    c: &Constants,
    kernel: K,
    visc: V,
    diff: D,
    shift: S,
    f: F,
) -> F::Output {
    match case.boundary {
        Boundary::Dbc => dispatch_b(case, c, kernel, visc, diff, shift, Dbc, f),
        Boundary::Mdbc { .. } => dispatch_b(case, c, kernel, visc, diff, shift, Mdbc, f),
    }
}

#[allow(clippy::too_many_arguments)]
fn dispatch_b<
    K: SmoothingKernel,
    V: ViscosityModel,
    D: DiffusionModel,
    S: ShiftingModel,
    B: BoundaryModel,
    F: WithPhysics,
>(
    case: &Case,
    c: &Constants,
    kernel: K,
    visc: V,
    diff: D,
    shift: S,
    boundary: B,
    f: F,
) -> F::Output {
    let (h, support2, eta2, wall_nu) = (c.h, c.support2, c.eta2, c.wall_nu);
    if case.dim == 2 {
        f.call(Physics::<K, V, D, S, B, 2> { kernel, visc, diff, h, support2, eta2, shift, boundary, wall_nu })
    } else {
        f.call(Physics::<K, V, D, S, B, 3> { kernel, visc, diff, h, support2, eta2, shift, boundary, wall_nu })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What fluid particle i, moving at `vi`, accumulates from neighbour j at rest at `r`
    /// (no pressure: p = 0), j's mDBC velocity `mdbc`, with the case's formulas.
    fn pair_sums(case: &Case, j_fluid: bool, r: V3, vi: V3, mdbc: V3) -> Accum {
        struct Pair(bool, V3, V3, V3);
        impl WithPhysics for Pair {
            type Output = Accum;
            fn call<
                K: SmoothingKernel,
                V: ViscosityModel,
                D: DiffusionModel,
                S: ShiftingModel,
                B: BoundaryModel,
                const DIM: usize,
            >(
                self,
                ph: Physics<K, V, D, S, B, DIM>,
            ) -> Accum {
                let Pair(j_fluid, r, vi, mdbc) = self;
                let at = |vel: V3, mdbc: [f32; 4]| PairParticle {
                    vel,
                    rho: 1000.0,
                    p: 0.0,
                    m: 1.0,
                    wall: [0.0, 0.0, 1.0, 0.02],
                    mdbc,
                };
                let mut out = Accum::default();
                let mdbc_j = [mdbc.x, mdbc.y, mdbc.z, 0.0];
                ph.fluid_pair(r, r.dot(r), &at(vi, [0.0; 4]), &at(V3::ZERO, mdbc_j), j_fluid, &mut out);
                out
            }
        }
        let c = Constants::of(case);
        dispatch(case, &c, Pair(j_fluid, r, vi, mdbc))
    }

    /// The viscous acceleration fluid particle i gets from j at `r`, approaching.
    fn viscous(case: &Case, j_fluid: bool, r: V3) -> V3 {
        pair_sums(case, j_fluid, r, -r * 30.0, V3::ZERO).acc
    }

    /// With mDBC walls the viscous term of a wall neighbour takes v_i less the ghost's
    /// velocity, but the step's viscous bound keeps v_i - v_j, the fluid's speed past the wall
    /// particle: fluid moving with its ghost (free slip along the wall) feels no viscous force
    /// from it and still bounds the step (taking the ghost's velocity there too let Test 2's
    /// late flow at dp 0.01 out of the density range: docs/ARCHITECTURE.md). DBC the same.
    /// Tolerance: float32 rounding of the same formula (1e-6 relative).
    #[test]
    fn the_viscous_bound_keeps_the_speed_past_the_wall_particles() {
        let text = r#"
            dp = 0.01
            time = { end = 1.0 }
            physics = { body_force = [0.0, 0.0, -9.81], viscosity = { kind = "artificial", alpha = 0.1 } }
            fluid = [{ min = [0.0, 0.0, 0.0], max = [0.1, 0.1, 0.1] }]
            wall = [{ min = [0.0, 0.0, 0.0], max = [0.2, 0.2, 0.2], faces = ["z-"] }]
        "#;
        let case = |b: &str| Case::from_str(text, &[format!("physics.boundary={b}")]).unwrap_or_else(|e| panic!("{e}"));
        // Approaching (v.r < 0), so the artificial viscosity acts on v_i - v_j.
        let (r, vi) = (V3::new(0.004, -0.003, 0.012), V3::new(-1.5, 0.5, -0.2));
        let full = |c: &Case| {
            let k = Constants::of(c);
            k.h * vi.dot(r).abs() / (r.dot(r) + k.eta2)
        };
        let close = |a: f32, b: f32| (a - b).abs() <= 1e-6 * b.abs();
        let mdbc = case(r#"{kind="mdbc", slip=true}"#);
        let with_ghost = pair_sums(&mdbc, false, r, vi, vi);
        assert_eq!(with_ghost.acc, V3::ZERO, "no viscous force from a ghost moving with the fluid");
        let want = full(&mdbc);
        assert!(
            want > 0.0 && close(with_ghost.visc_max, want),
            "a ghost moving with the fluid: {} against {want}",
            with_ghost.visc_max
        );
        let at_rest = pair_sums(&mdbc, false, r, vi, V3::ZERO);
        assert!(at_rest.acc.dot(r) > 0.0, "a ghost at rest pushes the approaching fluid back: {:?}", at_rest.acc);
        assert!(close(at_rest.visc_max, want), "a ghost at rest: {} against {want}", at_rest.visc_max);
        let dbc = case(r#"{kind="dbc"}"#);
        let got = pair_sums(&dbc, false, r, vi, vi).visc_max;
        assert!(close(got, full(&dbc)), "DBC: {got} against {}", full(&dbc));
    }

    /// `physics.viscosity.boundary_factor` scales the viscous term of a fluid particle's
    /// pairs with boundary particles (DualSPHysics' ViscoBoundFactor), artificial and
    /// laminar, DBC and mDBC, and leaves its pairs with fluid particles as they are. The
    /// factor is applied to alpha (nu) before the formula, so the term is the factor times
    /// the term of factor 1 within float32 rounding (1e-6 relative).
    #[test]
    fn the_boundary_factor_scales_the_viscosity_of_wall_pairs_only() {
        let text = r#"
            dp = 0.01
            time = { end = 1.0 }
            physics = { body_force = [0.0, 0.0, -9.81] }
            fluid = [{ min = [0.0, 0.0, 0.0], max = [0.1, 0.1, 0.1] }]
            wall = [{ min = [0.0, 0.0, 0.0], max = [0.2, 0.2, 0.2], faces = ["z-"] }]
        "#;
        let r = V3::new(0.004, -0.003, 0.012);
        for visc in [r#"kind="artificial", alpha=0.1"#, r#"kind="laminar", nu=1e-3"#] {
            for boundary in [r#"{kind="dbc"}"#, r#"{kind="mdbc", slip=false}"#] {
                let case = |factor: &str| {
                    let sets =
                        [format!("physics.viscosity={{{visc}{factor}}}"), format!("physics.boundary={boundary}")];
                    Case::from_str(text, &sets).unwrap_or_else(|e| panic!("{e}"))
                };
                let (one, fifth) = (case(""), case(", boundary_factor=0.2"));
                let what = format!("{visc}, {boundary}");
                assert_eq!(one.viscosity_boundary_factor, 1.0);
                assert_eq!(fifth.viscosity_boundary_factor, 0.2);
                let (w1, w5) = (viscous(&one, false, r), viscous(&fifth, false, r));
                assert!(w1.dot(w1) > 0.0, "{what}: a viscous term at the wall");
                let err = (w5 - w1 * 0.2).dot(w5 - w1 * 0.2).sqrt() / (w1.dot(w1).sqrt() * 0.2);
                assert!(err < 1e-6, "{what}: {w5:?} against 0.2 x {w1:?}");
                let (f1, f5) = (viscous(&one, true, r), viscous(&fifth, true, r));
                let bits = |v: V3| [v.x, v.y, v.z].map(f32::to_bits);
                assert_eq!(bits(f1), bits(f5), "{what}: fluid pairs");
                // The physics hash tells them apart (a checkpoint of one does not restart the other).
                assert_ne!(one.physics_hash(), fifth.physics_hash(), "{what}");
            }
        }
        // The laminar step limit 0.125 h² / nu takes the walls' nu where it is the larger.
        let laminar = |factor: f64| {
            let sets = [format!("physics.viscosity={{kind=\"laminar\", nu=1e-3, boundary_factor={factor}}}")];
            Case::from_str(text, &sets).unwrap_or_else(|e| panic!("{e}"))
        };
        let h = laminar(1.0).h;
        let dt = 0.125 * h * h / 1e-3;
        let laminar = |factor: f64| laminar(factor).limit_dt(1.0);
        assert!((laminar(0.2) - dt).abs() < 1e-12 * dt, "{}", laminar(0.2));
        assert!((laminar(4.0) - dt / 4.0).abs() < 1e-12 * dt, "{}", laminar(4.0));
        let bad =
            Case::from_str(text, &[r#"physics.viscosity={kind="artificial", alpha=0.1, boundary_factor=-1}"#.into()]);
        let e = bad.err().expect("a negative factor is refused").to_string();
        assert!(e.contains("physics.viscosity.boundary_factor") && e.contains(">= 0"), "{e}");
    }
}
