//! The float32 constants of a case's formulas, computed once from the case. The CPU loops,
//! the NVRTC defines of the CUDA twins, output and checkpoints all read these same values,
//! so the backends cannot drift apart in how they round a constant.

use super::eos::{tait_density, tait_pressure};
use super::kernel::{CubicSpline, SmoothingKernel, WendlandC2};
use crate::case::{Case, Diffusion, Shifting, Viscosity, WallFunction};
use crate::config::KernelKind;
use crate::V3;

/// Constants of the physics, in the precision the backends compute in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constants {
    /// Smoothing length h.
    pub h: f32,
    /// `1/h`, `a_w` and `a_f` of the case's kernel ([`SmoothingKernel::constants`]).
    pub kernel: [f32; 3],
    /// `(2h)²`: pairs at or beyond it do not interact.
    pub support2: f32,
    /// `eta² = 0.01 h²`, keeps denominators away from 0.
    pub eta2: f32,
    /// Reference density.
    pub rho0: f32,
    /// Speed of sound.
    pub c0: f32,
    /// Tait coefficient B.
    pub tait_b: f32,
    /// `1 / B`.
    pub inv_b: f32,
    /// Tait exponent.
    pub gamma: f32,
    /// `1 / gamma`.
    pub inv_gamma: f32,
    /// Background pressure.
    pub pb: f32,
    /// Body force.
    pub g: V3,
    /// Monaghan alpha (artificial viscosity only).
    pub alpha: f32,
    /// Kinematic viscosity (laminar viscosity only).
    pub nu: f32,
    /// alpha of the pairs of a fluid particle and a boundary particle (times
    /// [`Case::viscosity_boundary_factor`]; alpha where it is 1).
    pub alpha_wall: f32,
    /// nu of those pairs (likewise).
    pub nu_wall: f32,
    /// `delta h c0` of density diffusion (0 without it).
    pub delta_h_c0: f32,
    /// `A h` of Lind shifting (0 without it).
    pub shift_ah: f32,
    /// Free-surface threshold of the position divergence for shifting.
    pub shift_threshold: f32,
    /// The wall function's molecular viscosity (0 without one).
    pub wall_nu: f32,
    /// The wall function's smallest distance to the wall, a quarter of dp (`h / 8` at
    /// h = 2 dp): a particle at the wall's surface.
    pub wall_y_min: f32,
}

impl Constants {
    /// The constants of a case.
    pub fn of(case: &Case) -> Constants {
        let h = case.h as f32;
        let kernel = match case.kernel {
            KernelKind::WendlandC2 => WendlandC2::new(case.h, case.dim).constants(),
            KernelKind::CubicSpline => CubicSpline::new(case.h, case.dim).constants(),
        };
        let wall = case.viscosity_boundary_factor;
        let (alpha, nu, alpha_wall, nu_wall) = match case.viscosity {
            Viscosity::Artificial { alpha } => (alpha as f32, 0.0, (alpha * wall) as f32, 0.0),
            Viscosity::Laminar { nu } => (0.0, nu as f32, 0.0, (nu * wall) as f32),
        };
        let delta = match case.diffusion {
            Diffusion::None => 0.0,
            Diffusion::MolteniColagrossi { delta } | Diffusion::Fourtakas { delta } => delta,
        };
        let (shift_ah, shift_threshold) = match case.shifting {
            Shifting::None => (0.0, 0.0),
            Shifting::Lind { coefficient, surface_threshold } => {
                ((coefficient * case.h) as f32, surface_threshold as f32)
            }
        };
        Constants {
            h,
            kernel,
            support2: 4.0 * h * h,
            eta2: 0.01 * h * h,
            rho0: case.rho0 as f32,
            c0: case.c0 as f32,
            tait_b: case.tait_b as f32,
            inv_b: (1.0 / case.tait_b) as f32,
            gamma: case.gamma as f32,
            inv_gamma: (1.0 / case.gamma) as f32,
            pb: case.background_pressure as f32,
            g: V3::from_f64(case.body_force),
            alpha,
            nu,
            alpha_wall,
            nu_wall,
            delta_h_c0: (delta * case.h * case.c0) as f32,
            shift_ah,
            shift_threshold,
            wall_nu: match case.wall_function {
                WallFunction::None => 0.0,
                WallFunction::LogLaw { nu } => nu as f32,
            },
            wall_y_min: (0.25 * case.dp) as f32,
        }
    }

    /// Pressure of relative density d (Tait).
    #[inline(always)]
    pub fn pressure(&self, d: f32) -> f32 {
        tait_pressure(d, self.tait_b, self.gamma, self.pb)
    }

    /// Relative density at (total) pressure p, the inverse of [`Constants::pressure`].
    #[inline]
    pub fn rel_density(&self, p: f32) -> f32 {
        tait_density(p, self.tait_b, self.gamma, self.pb)
    }

    /// Physical density of relative density d.
    #[inline(always)]
    pub fn density(&self, d: f32) -> f32 {
        self.rho0 * (1.0 + d)
    }
}
